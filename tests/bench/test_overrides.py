"""Overrides compose the same whatever their order (task=/model= choices first, then values), a
value the chosen task/model lacks is refused by name, and sweeps compose their base the same way."""

from __future__ import annotations

import itertools

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from seqbench.bench.config import build_config, compose
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.core.settings import leaves, parse_pairs
from seqbench.sweeps.spec import load_spec

# valid values per key; every combination below builds (d_model is divisible by every n_heads)
COMMON = {
    "model.d_model": [16, 32],
    "model.n_layers": [1, 2],
    "model.dropout": [0.0, 0.1],
    "train.max_steps": [50, 100],
    "train.batch_size": [8, 16],
    "optim.lr": [0.001, 0.003],
    "optim.warmup_steps": [0, 10],
    "optim.schedule": ["constant", "cosine"],
    "seed": [0, 1],
    "eval.lengths": [[24, 48], []],
    "tracking.wandb": ["off", "offline"],
}
PER_TASK = {"copy": {"task.delay": [5, 9], "task.n_symbols": [2, 3]}, "adding": {"task.length": [20, 30]}}
PER_MODEL = {
    "rnn": {},
    "gru": {},
    "lstm": {"model.forget_bias": [0.5, 2.0]},
    "transformer": {"model.n_heads": [2, 4], "model.norm_position": ["pre", "post"]},
}
BASES = [
    {},
    build_config({}, ["model=lstm", "model.forget_bias=3.0", "task.delay=7"]).to_dict(),
    {"task": "adding", "model": {"d_model": 24}},
]


def _text(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


@st.composite
def override_lists(draw) -> list[str]:
    task = draw(st.sampled_from(sorted(PER_TASK)))
    model = draw(st.sampled_from(sorted(PER_MODEL)))
    pool = {**COMMON, **PER_TASK[task], **PER_MODEL[model]}
    keys = draw(st.lists(st.sampled_from(sorted(pool)), unique=True))
    spell = draw(st.sampled_from(["{s}={n}", "{s}.name={n}"]))  # model=gru or model.name=gru
    ovs = [spell.format(s="task", n=task), spell.format(s="model", n=model)]
    return ovs + [f"{k}={_text(draw(st.sampled_from(pool[k])))}" for k in keys]


@settings(max_examples=120, deadline=None)
@given(ovs=override_lists(), base=st.sampled_from(BASES), data=st.data())
def test_any_order_of_the_overrides_gives_the_same_config(ovs, base, data):
    shuffled = data.draw(st.permutations(ovs))
    a, b = build_config(base, ovs), build_config(base, shuffled)
    assert a.config_hash() == b.config_hash() and a == b
    for ov in ovs:  # and every value typed reached the config
        key, _, text = ov.partition("=")
        key = f"{key}.name" if key in ("task", "model") else key
        node = a.to_dict()
        for part in key.split("."):
            node = node[part]
        assert node == yaml.safe_load(text), (ov, node)


def test_a_value_before_the_model_choice_is_kept():
    cfg = build_config({}, ["model.d_model=32", "model=gru"])  # trained d_model 128 before
    assert (cfg.model.name, cfg.model.d_model) == ("gru", 32)


def _foreign(reg, chosen: str) -> list[tuple[str, str]]:
    """(field, owner): fields other entries of ``reg`` have and ``chosen`` has not."""
    own = set(reg.get(chosen).config_cls.model_fields)
    return sorted({(f, e.name) for e in reg for f in e.config_cls.model_fields if f not in own})


@pytest.mark.parametrize("chosen", MODELS.names())
def test_a_field_of_a_model_not_chosen_is_refused_in_either_order(chosen):
    task = next(
        t.name for t in TASKS if t.config_cls.facts.output_kind in MODELS.get(chosen).config_cls.supported_kinds
    )
    for field, owner in _foreign(MODELS, chosen)[:3]:
        default = MODELS.get(owner).config_cls.model_fields[field].default
        typed = f"model.{field}={_text(default)}"
        for ovs in ([typed, f"model={chosen}"], [f"model={chosen}", typed]):
            with pytest.raises(UserError, match=rf"^model\.{field}: unknown field"):
                build_config({}, [f"task={task}", *ovs])


@pytest.mark.parametrize("chosen", ["adding", "copy"])
def test_a_field_of_a_task_not_chosen_is_refused_even_if_the_base_had_it(chosen):
    field, owner = _foreign(TASKS, chosen)[0]
    base = {"task": {"name": owner}}
    with pytest.raises(UserError, match=rf"^task\.{field}: unknown field"):
        build_config(base, [f"task.{field}=3", f"task={chosen}"])


def test_a_key_inside_another_settings_value_is_refused():
    with pytest.raises(UserError, match=r"^train\.early_stop\.threshold: also set by train\.early_stop=null"):
        build_config({}, ["train.early_stop.threshold=0.5", "train.early_stop=null"])


def test_a_repeated_key_keeps_its_last_value_and_is_reported():
    composed = compose({}, ["train.max_steps=5", "train.max_steps=7", "model=gru", "model.name=gru"])
    assert composed.data["train"]["max_steps"] == 7 and composed.repeated == ["train.max_steps"]


def test_mappings_and_dotted_keys_are_the_same_setting():
    assert leaves(parse_pairs(["train={max_steps: 5, early_stop: {threshold: 0.9}}"])) == leaves(
        parse_pairs(["train.early_stop.threshold=0.9", "train.max_steps=5"])
    )
    a = build_config({}, ["model={name: gru, d_model: 8}"])
    assert a == build_config({}, ["model.d_model=8", "model=gru"])


def test_sweep_overrides_compose_into_the_base_in_any_order(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(
        yaml.safe_dump(
            {
                "base": {"task": {"name": "copy", "delay": 4}, "model": {"d_model": 16}},
                "parameters": {"train.max_steps": {"values": [2, 3]}},
            }
        )
    )
    ovs = ["model.d_model=8", "model=gru", "task=adding", "task.length=9"]
    specs = {yaml.safe_dump(load_spec(p, list(perm)).to_dict()) for perm in itertools.permutations(ovs)}
    assert len(specs) == 1
    base = yaml.safe_load(specs.pop())["base"]
    assert base["model"] == {"name": "gru", "d_model": 8} and base["task"] == {"name": "adding", "length": 9}


@pytest.mark.parametrize(
    "override, block",
    [
        ("train.max_steps=5", "parameters.train.max_steps"),
        ("model.name=rnn", "parameters.model.name"),
        ("model=rnn", "parameters.model.name"),
        ("model.forget_bias=0.5", "per_model.lstm"),
    ],
)
def test_a_sweep_override_the_spec_sets_per_trial_is_refused(tmp_path, override, block):
    p = tmp_path / "s.yaml"
    p.write_text(
        yaml.safe_dump(
            {
                "base": {"task": {"name": "copy", "delay": 4}, "model": {"d_model": 16}},
                "parameters": {"train.max_steps": {"values": [2, 3]}, "model.name": {"values": ["gru", "lstm"]}},
                "per_model": {"lstm": {"model.forget_bias": 2.0}},
            }
        )
    )
    key = override.split("=")[0] if override != "model=rnn" else "model.name"
    with pytest.raises(UserError, match=rf"^{key}: .*{block}"):
        load_spec(p, [override])


def test_a_sweep_trial_is_composed_like_a_run_with_the_same_settings():
    """One composition: a trial's config (base, swept values, its model's and task's blocks) is the
    config `run` builds from the base with those settings as overrides, and a block's mapping merges
    into the base's section leaf by leaf."""
    from seqbench.sweeps.spec import parse_spec, trial_config

    base = {
        "task": {"name": "copy", "n_symbols": 2, "alphabet": 3, "delay": 4},
        "model": {"d_model": 16},
        "train": {"max_steps": 8, "early_stop": {"metric": "val/acc", "threshold": 0.5}},
    }
    spec = parse_spec(
        {
            "base": base,
            "parameters": {"model.name": {"values": ["gru", "lstm"]}},
            "per_model": {"lstm": {"model.forget_bias": 2.0, "train": {"early_stop": {"threshold": 0.9}}}},
            "per_task": {"copy": {"task.delay": 5, "train.early_stop.threshold": 0.7}},
        }
    )
    lstm = trial_config(spec, {"model.name": "lstm"}, seed=3, extra={})
    assert lstm == build_config(
        base, ["model=lstm", "model.forget_bias=2.0", "task.delay=5", "train.early_stop.threshold=0.9", "seed=3"]
    )
    assert lstm.train.early_stop.metric == "val/acc" and lstm.train.max_steps == 8  # merged, not replaced
    gru = trial_config(spec, {"model.name": "gru"}, seed=3, extra={})
    assert gru == build_config(base, ["task.delay=5", "train.early_stop.threshold=0.7", "model=gru", "seed=3"])


def test_compare_builds_its_base_like_run_composes_overrides():
    from seqbench.bench.commands.compare import build_spec

    words = ["train={max_steps: 5, early_stop: {metric: val/mse, threshold: 0.1}}", "model.d_model=8", "task=adding"]
    raw, _ = build_spec(["model=lstm,gru", *words])
    assert raw["base"] == compose({}, words).data
    assert build_config(raw["base"], ["model=gru"]) == build_config({}, [*words, "model=gru"])
