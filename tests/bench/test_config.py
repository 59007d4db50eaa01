"""RunConfig: defaults, YAML round trip, dotted overrides, cross-field rules, one-line errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from seqbench.bench.config import build_config, compose, load_config, override, parse_value
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MODELS, TASKS, Registry


def test_defaults_are_valid_and_frozen():
    cfg = build_config({})
    assert cfg.task.name == "copy" and cfg.model.name == "lstm"
    with pytest.raises(ValidationError, match="frozen"):
        cfg.seed = 3
    assert cfg.seed == 0


def test_yaml_round_trip_keeps_subclass_fields(tmp_path):
    cfg = build_config({}, ["task=adding", "task.length=33", "model=irnn", "model.recurrent_init_scale=0.5"])
    p = tmp_path / "run.yaml"
    p.write_text(cfg.to_yaml())
    again = load_config(p)
    assert again == cfg
    assert again.task.length == 33 and again.model.recurrent_init_scale == 0.5


def test_overrides_apply_on_top_of_yaml(tmp_path):
    p = tmp_path / "run.yaml"
    p.write_text("model: {name: gru, d_model: 32}\noptim: {lr: 0.01}\ntracking: {wandb: off}\n")
    cfg = load_config(p, ["model.n_layers=2", "optim.warmup_steps=100"])
    assert (cfg.model.name, cfg.model.d_model, cfg.model.n_layers) == ("gru", 32, 2)
    assert cfg.optim.lr == 0.01 and cfg.optim.warmup_steps == 100
    assert cfg.tracking.wandb == "off"  # YAML 1.1 would have read `off` as False


def test_switching_task_leaves_out_the_base_knobs_the_new_task_lacks_and_says_so():
    composed = compose({"task": {"name": "copy", "delay": 7}}, ["task=adding"])
    assert composed.dropped == ["task.delay"]
    cfg = build_config({"task": {"name": "copy", "delay": 7}}, ["task=adding"])
    assert cfg.task.name == "adding" and cfg.task.length == 100


def test_switching_model_keeps_the_base_fields_the_new_model_has():
    base = build_config({}, ["model=lstm", "model.d_model=48", "model.forget_bias=2.0"]).to_dict()
    composed = compose(base, ["model=gru"])
    assert composed.dropped == ["model.forget_bias"]
    assert build_config(base, ["model=gru"]).model.d_model == 48


def test_override_revalidates():
    cfg = build_config({})
    assert override(cfg, **{"model.d_model": 8}).model.d_model == 8
    with pytest.raises(UserError, match="model.d_model"):
        override(cfg, **{"model.d_model": 0})


def test_parse_value_types():
    assert parse_value("1e-3") == pytest.approx(1e-3)
    assert parse_value("true") is True and parse_value("off") == "off"
    assert parse_value("[64, 128]") == [64, 128] and parse_value("null") is None
    assert parse_value("1:30") == "1:30" and parse_value("010") == 10  # YAML 1.1 would say 90 and 8


@pytest.mark.parametrize(
    "override",
    ["train.max_steps=true", "optim.lr=true", "model.dropout=false", "eval.lengths=[true]", "train.threads=false"],
)
def test_a_boolean_is_not_a_number(override):
    with pytest.raises(UserError, match=rf"^{override.split('=')[0]}(\.0)?: .*'(true|false)'"):
        build_config({}, [override])


def test_config_hash_ignores_where_results_go():
    a = build_config({}, ["out_dir=/tmp/a", "tracking.wandb=off"])
    b = build_config({}, ["out_dir=/tmp/b", "tracking.wandb=offline", "run_id=x"])
    c = build_config({}, ["seed=1"])
    assert a.config_hash() == b.config_hash() != c.config_hash()


@pytest.mark.parametrize(
    "overrides, field, allowed",
    [
        (["task=foo"], "task.name", "copy"),
        (["model=transformerz"], "model.name", "lstm"),
        (["model.foo=1"], "model.foo", "d_model"),
        (["optim.optimizer=lion"], "optim.optimizer", "radam"),
        (["optim.schedule=step"], "optim.schedule", "inverse_sqrt"),
        (["task.delay=-1"], "task.delay", "greater than or equal to 1"),
        (["train.batch_size=abc"], "train.batch_size", "integer"),
        (["tracking.wandb=maybe"], "tracking.wandb", "offline"),
        (["model=rnn", "model.bidirectional=true"], "model.bidirectional", "bidirectional=false"),
        (["optim.warmup_steps=5000", "train.max_steps=100"], "optim.warmup_steps", "max_steps"),
        (["optim.warmup_steps=50", "optim.decay_from=10"], "optim.decay_from", "optim.warmup_steps=50"),
        (["train.early_stop={metric: val/mse, threshold: 1}"], "train.early_stop.metric", "val/acc"),
        (["nonsense"], "nonsense", "key=value"),
        (["seed=-1"], "seed", "greater than or equal to 0"),
    ],
)
def test_bad_input_names_field_and_fix(overrides, field, allowed):
    with pytest.raises(UserError) as e:
        build_config({}, overrides)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(field), msg
    assert allowed in msg, msg


def test_unreadable_yaml(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("task: [unclosed\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_config(p)
    p.write_text("- a list\n")
    with pytest.raises(UserError, match="mapping"):
        load_config(p)


def test_yaml_is_read_safely(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("seed: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(UserError, match="not valid YAML at line 1"):
        load_config(p)


def test_registry_unknown_name_lists_valid_ones():
    with pytest.raises(KeyError) as e:
        TASKS.get("nope")
    for name in TASKS.names():
        assert name in str(e.value)


def test_registry_refuses_duplicates_and_mismatched_config():
    reg = Registry("thing")
    cfg = TASKS.get("copy").config_cls
    reg.register("copy", config=cfg)(type("A", (), {}))
    with pytest.raises(ValueError, match="twice"):
        reg.register("copy", config=cfg)(type("B", (), {}))
    with pytest.raises(ValueError, match="Literal"):
        reg.register("other", config=cfg)(type("C", (), {}))


def test_every_registered_entry_is_configurable():
    for e in TASKS:
        assert (
            build_config(
                {},
                [f"task={e.name}", "model=lstm"]
                if e.config_cls.facts.output_kind.value != "seq2seq"
                else [f"task={e.name}", f"model={_seq2seq_model()}"],
            ).task.name
            == e.name
        )
    for e in MODELS:
        kinds = e.config_cls.supported_kinds
        task = next(t.name for t in TASKS if t.config_cls.facts.output_kind in kinds)
        assert build_config({}, [f"task={task}", f"model={e.name}"]).model.name == e.name


def _seq2seq_model() -> str:
    return next(m.name for m in MODELS if any(k.value == "seq2seq" for k in m.config_cls.supported_kinds))
