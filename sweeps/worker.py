"""The worker loop: take a trial, run it, until the study's budget is met.

Grid workers pop WAITING trials (the creator enqueued every grid point); tpe/random/nsga2 workers
ask the sampler. Finished trials are never re-run. Before each trial a worker fails the RUNNING
trials of dead workers (no heartbeat for the grace period) and queues their configurations again.
"""

from __future__ import annotations

import time
from typing import Literal

import optuna
from optuna.trial import TrialState

from seqbench.sweeps.liveness import reap_stale, superseded, waiting_line
from seqbench.sweeps.optuna_adapter import claim_waiting
from seqbench.sweeps.progress import Progress, start_line, trial_line
from seqbench.sweeps.spec import Scalar, SweepSpec, parse_spec
from seqbench.sweeps.storage import journal_space
from seqbench.sweeps.study import Job, counts_as_done, n_done, open_study, optuna_quiet, space_needed
from seqbench.sweeps.trial import run_trial, suggest

WAIT_FIRST = 0.05  # seconds before a waiting worker first looks again (``_loop``)


def _pop_waiting(study: optuna.Study) -> optuna.Trial | None:
    """Take one WAITING trial; the storage lets exactly one worker win each."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        trial = claim_waiting(study, t)
        if trial is not None:
            return trial
    return None


def next_trial(study: optuna.Study, spec: SweepSpec) -> optuna.Trial | None | Literal[False]:
    """A trial to run, None to wait (others still running), False when the budget is met."""
    trials = study.get_trials(deepcopy=False)
    gone = superseded(trials)
    waiting = [t for t in trials if t.state == TrialState.WAITING]
    running = [t for t in trials if t.state == TrialState.RUNNING]
    done = [t for t in trials if counts_as_done(t, gone)]
    if spec.method == "grid":
        if waiting:
            return _pop_waiting(study)
    elif waiting or len(done) + len(running) < spec.budget():
        return study.ask()
    return None if running else False


def worker(
    job: Job,
    study: optuna.Study | None = None,
    *,
    spec: SweepSpec | None = None,
    max_trials: int | None = None,
    timeout: float | None = None,
) -> int:
    """Run trials until the study's budget is met; returns how many this worker finished. ``spec``: the
    validated spec of ``job.spec`` when the caller holds it (a worker process parses the job's own)."""
    optuna_quiet()
    spec = spec if spec is not None else parse_spec(job.spec, source=job.spec_path)
    opened = study  # what a full disk's message estimates the rest of the study from (the lambda reads it late)
    with journal_space(job.storage, job.out_dir, lambda: space_needed(opened, spec, job.out_dir)):
        opened = opened if opened is not None else open_study(job, spec, coordinator=False)
        return _loop(job, opened, spec, max_trials, timeout)


def _loop(job: Job, study: optuna.Study, spec: SweepSpec, max_trials: int | None, timeout: float | None) -> int:
    """``worker``'s loop: reap dead workers' trials, take the next trial, run it, say so."""
    timeout = timeout if timeout is not None else spec.timeout
    t0, finished, told = time.time(), 0, set[int]()
    poll = max(0.2, min(2.0, job.heartbeat / 2))
    # Waiting on trials other workers run: re-check after WAIT_FIRST s, doubling up to ``poll``. A flat 2 s
    # sleep kept a sweep of short trials up to 2 s past its last trial (a 10 s sweep of 16 trials of 0.3 s
    # gained nothing from a second worker); the doubling keeps a long wait at one storage read per ``poll``.
    wait = WAIT_FIRST
    progress = Progress(spec.budget(), n_done(study.get_trials(deepcopy=False)))
    while max_trials is None or finished < max_trials:
        if timeout is not None and time.time() - t0 > timeout:
            break
        reap_stale(
            study,
            job.grace,
            on_reaped=lambda t, why: print(
                f"trial {t.number:>4} FAIL     {why.removesuffix('; retried')}; its configuration is queued again",
                flush=True,
            ),
        )
        trial = next_trial(study, spec)
        if trial is False:
            break
        if trial is None:
            _say_waiting(study, job.grace, told)
            time.sleep(min(wait, poll))
            wait *= 2
            continue
        wait = WAIT_FIRST
        print(start_line(trial.number, _params_or_none(trial, spec)), flush=True)
        frozen = run_trial(study, trial, spec, job)
        finished += 1
        if frozen is not None:
            print(
                trial_line(frozen, spec.metrics(), progress.tag(n_done(study.get_trials(deepcopy=False)))), flush=True
            )
    return finished


def _say_waiting(study: optuna.Study, grace: float, told: set[int]) -> None:
    """One line per RUNNING trial this worker waits on (which worker runs it, and when it is given up)."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t.number not in told:
            told.add(t.number)
            print(waiting_line(t, grace), flush=True)


def _params_or_none(trial: optuna.Trial, spec: SweepSpec) -> dict[str, Scalar]:
    """The trial's configuration for its start line (suggesting is idempotent: run_trial gets the same)."""
    try:
        return suggest(trial, spec)
    except Exception:  # noqa: BLE001 - run_trial reports a sampling failure as the trial's FAIL
        return {}
