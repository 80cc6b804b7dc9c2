"""The ``command`` workload: any program as the measured process."""
