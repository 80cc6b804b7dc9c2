"""Vendor advice, judged here: packs of published guidance about huge pages, each an experiment a user runs.

A pack (``packs/<name>.yaml``, data in the package) holds a vendor's words with their sources, the
**presets** that put each piece of advice into effect (a named set of kernel knobs and program options),
an experiment (an ordinary ``workload:`` with ``preset`` as one of its axes) and the vendor's words as
**claims** (a direction or a number, on one preset against another). ``pack`` reads and checks a pack and
turns it into an ordinary :class:`~hugebench.experiment.ExperimentSpec`: each preset's knobs and options
become axes whose combinations outside the presets are excluded, so a preset's knobs are journaled and
restored like any knob and its runs are planned, run and stored as ``sweep`` makes them. ``session`` runs a
pack within a budget (``hugebench advice NAME``); ``hugebench.report.advice`` judges the claims in the
report ("Vendor advice, judged here").
"""
