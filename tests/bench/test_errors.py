"""What a user sees when input is wrong: every problem on its own line, the name they probably meant,
an unknown key called unknown, Hydra habits answered with the seqbench spelling, and `list -v`
showing the allowed values before any error does."""

from __future__ import annotations

import typing

import pytest
import yaml

from seqbench.bench.cli import main
from seqbench.bench.config import RunConfig, build_config
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.core.schema import Section, describe_field

TINY = {
    "task": {"name": "copy", "n_symbols": 2, "alphabet": 3, "delay": 4},
    "model": {"d_model": 16},
    "train": {"max_steps": 8},
    "tracking": {"wandb": "off"},
}


def _err(argv: list[str], capsys) -> list[str]:
    assert main(argv) == 2, argv
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert all(line.startswith("error: ") for line in lines), err
    return lines


def _spec(tmp_path, **kw) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump({"base": TINY, **kw}))
    return str(p)


# -- every problem, one line each -----------------------------------------------------------------


def test_two_mistakes_in_run_give_two_lines(capsys):
    lines = _err(["run", "model.d_modl=3", "optim.lr=-1", "--print-config"], capsys)
    assert len(lines) == 2
    assert lines[0].startswith("error: model.d_modl: unknown field") and "did you mean model.d_model?" in lines[0]
    assert lines[1].startswith("error: optim.lr: Input should be greater than 0")


def test_two_mistakes_in_a_sweep_spec_give_two_lines(tmp_path, capsys):
    path = _spec(
        tmp_path,
        parameters={"model.d_model": {"values": [8, 16]}, "optim.lrr": {"values": [0.1, 0.2]}},
        per_task={"copy": {"task.dealy": 3}},
    )
    lines = _err(["sweep", path, "--print-config"], capsys)
    assert len(lines) == 2, lines
    lrr, dealy = sorted(lines, key=lambda line: "task.dealy" in line)
    assert "optim.lrr: unknown field" in lrr and "did you mean optim.lr?" in lrr
    assert "task.dealy: unknown field" in dealy and "did you mean task.delay?" in dealy


def test_a_field_with_several_allowed_types_is_one_problem():
    with pytest.raises(UserError) as e:
        build_config({}, ["train.devices=x"])
    assert e.value.problems == [
        "train.devices: Input should be a valid integer, unable to parse string as an integer or 'auto' (got 'x')"
    ]


# -- did you mean ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, line",
    [
        (["run", "model=lsmt"], "error: model.name: unknown name 'lsmt'; did you mean lstm?"),
        (["run", "task.dealy=5"], "did you mean task.delay?"),
        (["run", "optim.optimizer=adamm"], "did you mean adam"),
        (["run", "optm.lr=0.1"], "did you mean optim?"),
        (["compare", "model=lstm,gru", "task.dealy=5,10"], "did you mean task.delay?"),
        (["compare", "model=lsmt,gru"], "unknown model 'lsmt'; did you mean lstm?"),
        (["compare", "model=lstm,gru", "model.forgt_bias=1"], "did you mean model.forget_bias?"),
        (["cost", "models=lsmt"], "models: unknown model 'lsmt'; did you mean lstm?"),  # run's words
    ],
)
def test_a_misspelt_name_or_key_gets_the_right_suggestion(argv, line, capsys):
    lines = _err([*argv, *(["--print-spec"] if argv[0] == "compare" else [])], capsys)
    assert len(lines) == 1 and line in lines[0], lines


def test_a_misspelt_sweep_override_gets_the_right_suggestion(tmp_path, capsys):
    path = _spec(tmp_path, parameters={"model.name": {"values": ["lstm", "gru"]}})
    lines = _err(["sweep", path, "task.dealy=5", "--print-config"], capsys)
    assert len(lines) == 1 and "task.dealy: unknown field" in lines[0] and "did you mean task.delay?" in lines[0]


def test_an_unknown_key_is_called_unknown_not_a_field_of_another_model(tmp_path, capsys):
    typo = _err(["compare", "model=lstm,gru", "task.dealy=5,10", "--print-spec"], capsys)[0]
    assert "unknown field" in typo and "per_model" not in typo
    # a field another model has is named as such, and a sweep says where it goes
    path = _spec(
        tmp_path, parameters={"model.name": {"values": ["rnn", "lstm"]}, "model.forget_bias": {"values": [1, 2]}}
    )
    other = _err(["sweep", path, "--print-config"], capsys)[0]
    assert (
        "model.forget_bias: unknown field for model rnn (lstm has it; fields only some models have go "
        "under per_model.<name>)" in other
    )
    with pytest.raises(UserError, match=r"^model\.forget_bias: unknown field for model gru \(lstm has it\)"):
        build_config({}, ["model=gru", "model.forget_bias=1"])


def test_switching_model_drops_fields_of_other_models_but_not_typos():
    lstm_run = {"model": {"name": "lstm", "forget_bias": 2.0, "forgt_bias": 1}}
    with pytest.raises(UserError, match=r"^model\.forgt_bias: unknown field"):
        build_config(lstm_run, ["model=gru"])
    del lstm_run["model"]["forgt_bias"]
    assert build_config(lstm_run, ["model=gru"]).model.name == "gru"


# -- Hydra habits ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, says",
    [
        (["run", "model=lstm,gru"], "seqbench compare model=lstm,gru"),
        (["run", "task=copy", "task.delay=5,10"], "seqbench compare task.delay=5,10"),
        (["run", "-m", "model=lstm"], "seqbench compare"),
        (["run", "--multirun", "model=lstm"], "seqbench compare"),
        (["run", "--cfg", "job"], "--print-config"),
    ],
)
def test_hydra_habits_in_run_get_one_line_with_the_seqbench_spelling(argv, says, capsys):
    lines = _err(argv, capsys)
    assert len(lines) == 1 and says in lines[0], lines


def test_a_comma_inside_a_valid_value_is_not_a_sweep():
    assert build_config({}, ["tracking.group=a,b"]).tracking.group == "a,b"


# -- list -v shows what is allowed ----------------------------------------------------------------


def test_list_verbose_shows_allowed_values_and_ranges(capsys):
    assert main(["list", "-v", "optim"]) == 0
    out = capsys.readouterr().out
    assert "optim.optimizer = adam - optimizer family [adam | adamw | sgd | radam]\n" in out
    assert "optim.momentum = 0.9 - sgd momentum [>= 0, < 1]\n" in out
    assert "optim.grad_clip = 1.0 - clip the global gradient norm to this; null = off [> 0 or null]\n" in out


def _fields(cls: type, prefix: str = ""):
    for name, f in cls.model_fields.items():
        yield prefix + name, f
        for sub in [
            a
            for a in getattr(f.annotation, "__args__", (f.annotation,))
            if isinstance(a, type) and issubclass(a, Section)
        ]:
            yield from _fields(sub, f"{prefix}{name}.")


def test_every_bound_and_choice_is_described_beforehand():
    """Each bound a field declares and each choice it takes is in its description: what the error
    would say, `list -v` says first (every section, every registered task and model)."""
    classes = [RunConfig, *(e.config_cls for reg in (TASKS, MODELS) for e in reg)]
    for key, field in [kf for cls in classes for kf in _fields(cls)]:
        text = describe_field(field)
        for m in field.metadata:
            for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                if getattr(m, attr, None) is not None:
                    assert f"{sign} {getattr(m, attr)}" in text, (key, text)
        args = [
            a
            for arg in (field.annotation, *typing.get_args(field.annotation))
            for a in [arg]
            if typing.get_origin(a) is typing.Literal
        ]
        for choice in [c for lit in args for c in typing.get_args(lit)]:
            assert str(choice) in [c for part in text.split(" or ") for c in part.split(" | ")], (key, text)
