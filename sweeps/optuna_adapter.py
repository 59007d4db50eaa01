"""Every use of Optuna beyond its documented Study/Trial API, in one place.

seqbench needs a few things Optuna's public API does not offer: several workers claiming enqueued
trials one at a time, a liveness stamp on a RUNNING trial, failing another worker's stale trial,
and a study flag that is not part of the user attrs (the report contract). Each function below
says why it is needed and what it relies on. All were checked against Optuna 5.0.0
(``CHECKED_WITH``); ``tests/sweeps/test_optuna_adapter.py`` calls every one of them against the
installed Optuna, so an upgrade that breaks one fails there, by name, not somewhere in a sweep.
Nothing outside this module reads an attribute of an Optuna object whose name starts with ``_``.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

CHECKED_WITH = "5.0.0"  # the Optuna version these functions were last checked against


def storage_of(study: optuna.Study) -> optuna.storages.BaseStorage:
    """The storage behind ``study``: ``Study._storage`` (private; Optuna has no getter). Needed to
    write trial system attrs and states directly (heartbeat, claiming, reaping)."""
    return study._storage


def study_id(study: optuna.Study) -> int:
    """``Study._study_id`` (private): the storage's key for the study's own system attrs."""
    return study._study_id


def trial_id(trial: optuna.Trial | FrozenTrial) -> int:
    """``Trial._trial_id`` / ``FrozenTrial._trial_id`` (private): the storage's key for a trial; the
    public ``number`` is per study, the storage methods take the id."""
    return trial._trial_id


def study_flag(study: optuna.Study, key: str) -> Any:
    """A study system attr (``Study.system_attrs`` is deprecated since Optuna 3.1; the storage
    method is not). seqbench keeps its own flags there so the user attrs stay the report contract."""
    return storage_of(study).get_study_system_attrs(study_id(study)).get(key)


def set_study_flag(study: optuna.Study, key: str, value: Any) -> None:
    """Set a study system attr (see ``study_flag``)."""
    storage_of(study).set_study_system_attr(study_id(study), key, value)


def set_trial_flag(study: optuna.Study, trial: optuna.Trial | FrozenTrial, key: str, value: Any) -> None:
    """Set a trial system attr (``Trial.set_system_attr`` was removed in Optuna 4): the heartbeat
    stamp and the worker name. Raises ``UpdateFinishedTrialError`` once the trial is finished."""
    storage_of(study).set_trial_system_attr(trial_id(trial), key, value)


def claim_waiting(study: optuna.Study, t: FrozenTrial) -> optuna.Trial | None:
    """Make the WAITING trial ``t`` this worker's RUNNING trial; None when another worker won it.

    ``Study.ask`` pops the oldest WAITING trial, but it also samples a new one when none waits,
    which a grid worker must not do. The storage's compare-and-set of WAITING -> RUNNING lets
    exactly one worker win, and ``optuna.Trial(study, trial_id)`` is how ``ask`` itself wraps the
    claimed trial (its ``fixed_params`` system attr then answers ``suggest_*``).
    """
    try:
        if storage_of(study).set_trial_state_values(trial_id(t), TrialState.RUNNING):
            return optuna.Trial(study, trial_id(t))
    except UpdateFinishedTrialError:
        pass  # finished meanwhile
    return None


def fail_trial(study: optuna.Study, t: FrozenTrial, user_attrs: dict[str, Any]) -> bool:
    """Set ``user_attrs`` on another worker's RUNNING trial, then fail it; False when it finished
    meanwhile (or another worker failed it first). ``Study.tell`` would do it, but only for a trial
    object this process owns; reaping a dead worker's trial needs the storage methods."""
    storage = storage_of(study)
    try:
        for k, v in user_attrs.items():
            storage.set_trial_user_attr(trial_id(t), k, v)
        storage.set_trial_state_values(trial_id(t), TrialState.FAIL)
    except UpdateFinishedTrialError:
        return False
    return True


def frozen(study: optuna.Study, trial: optuna.Trial | FrozenTrial) -> FrozenTrial:
    """The stored state of ``trial`` now (``Trial`` has no public way to freeze itself)."""
    return storage_of(study).get_trial(trial_id(trial))


def enqueued_params(t: FrozenTrial) -> dict[str, Any]:
    """The parameters ``Study.enqueue_trial`` fixed for ``t``: Optuna keeps them in the trial's
    ``fixed_params`` system attr (an internal key) until each is suggested; a trial that died before
    suggesting has them only there."""
    return dict(t.system_attrs.get("fixed_params", {}))
