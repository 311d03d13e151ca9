"""autoresearch: Karpathy's research loop as durable workflows, offline (the seed's second app).

A session parent runs a budget of experiments. For each, an agent child asks
a (scripted, offline) model for one proposal, and an experiment child tries
it: it takes the "gpu" mutex, applies the patch, trains, and keeps the patch
when validation bits-per-byte improved or reverts it (a saga). The session
takes ideas by signal, answers a "status" query and a "budget" update, marks
its best score in search attributes, and continues as new every few
experiments so its history stays short. `init` also schedules an hourly
summary of the lab.

    python -m examples.autoresearch init /tmp/ar-lab
    python -m examples.autoresearch run --lab /tmp/ar-lab --tag demo --experiments 8 --explore 100
    python -m examples.autoresearch status --lab /tmp/ar-lab --tag demo

Kill `run` at any point and start it again: the session resumes where it
was, and no experiment is recorded twice. `touch LAB/hold` holds training
(the GPU is busy) until the file goes: time to steer with `idea` and `budget`.
"""
