"""Every function of ``sweeps/optuna_adapter.py`` against the installed Optuna: the private attributes
and internal keys seqbench relies on. An Optuna upgrade that renames one fails here, by name."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState

from seqbench.sweeps import optuna_adapter as oa
from seqbench.sweeps.storage import open_storage


@pytest.fixture(params=["journal", "sqlite"])
def study(request, tmp_path) -> optuna.Study:
    """A study in each storage kind seqbench opens on one machine (RDB stands for postgres/mysql)."""
    url = str(tmp_path / "j.journal") if request.param == "journal" else f"sqlite:///{tmp_path}/s.db"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(study_name="s", storage=open_storage(url, tmp_path))


def test_storage_and_ids_name_the_study_and_its_trials(study):
    storage = oa.storage_of(study)
    assert isinstance(storage, optuna.storages.BaseStorage)
    assert storage.get_study_name_from_id(oa.study_id(study)) == "s"
    trial = study.ask()
    assert storage.get_trial(oa.trial_id(trial)).number == trial.number
    assert oa.trial_id(study.get_trials()[0]) == oa.trial_id(trial)  # a FrozenTrial has the same id


def test_study_flags_stay_out_of_the_user_attrs(study):
    assert oa.study_flag(study, "seqbench:ready") is None
    oa.set_study_flag(study, "seqbench:ready", True)
    assert oa.study_flag(study, "seqbench:ready") is True and "seqbench:ready" not in study.user_attrs
    again = optuna.load_study(study_name="s", storage=oa.storage_of(study))
    assert oa.study_flag(again, "seqbench:ready") is True


def test_trial_flags_are_system_attrs_and_refused_once_finished(study):
    trial = study.ask()
    oa.set_trial_flag(study, trial, "heartbeat", 12.5)
    assert study.get_trials()[0].system_attrs["heartbeat"] == 12.5 and not study.get_trials()[0].user_attrs
    study.tell(trial, 1.0)
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):
        oa.set_trial_flag(study, trial, "heartbeat", 13.0)


def test_claim_waiting_lets_one_worker_win_and_the_claimed_trial_suggests_its_enqueued_params(study):
    study.enqueue_trial({"x": 3})
    waiting = study.get_trials(states=(TrialState.WAITING,))[0]
    assert oa.enqueued_params(waiting) == {"x": 3}
    other = optuna.load_study(study_name="s", storage=oa.storage_of(study))  # a second worker
    won = oa.claim_waiting(study, waiting)
    assert won is not None and oa.claim_waiting(other, waiting) is None
    assert won.suggest_int("x", 0, 9) == 3 and oa.frozen(study, won).state == TrialState.RUNNING
    study.tell(won, 0.5)
    assert oa.claim_waiting(other, waiting) is None  # finished: nothing to claim
    assert oa.frozen(study, won).state == TrialState.COMPLETE and oa.frozen(study, won).value == 0.5


def test_fail_trial_fails_another_workers_trial_once(study):
    trial = study.ask({"x": IntDistribution(0, 9)})
    running = study.get_trials()[0]
    reaper = optuna.load_study(study_name="s", storage=oa.storage_of(study))
    assert oa.fail_trial(reaper, running, {"fail_reason": "lost", "retried": True})
    assert not oa.fail_trial(reaper, running, {"fail_reason": "again"})  # already finished
    t = oa.frozen(study, trial)
    assert t.state == TrialState.FAIL and t.user_attrs == {"fail_reason": "lost", "retried": True}
