"""The machine a run happens on: allocators, the environment and launch of a process, what the process
really got (ELF, malloc probe, THP state, coverage sampler), and the record of the machine itself."""
