"""The time budget: its plans from measured (here: simulated) times, and a
short budgeted training run that ends at its plan."""

import json
import os
import re
import time

import pytest

from elmo_core.errors import KerasElmoError
from elmo_core.settings import time_budget
from elmo_core.settings.time_budget import TimeBudget
from elmo_core.settings.time_budget import parse_duration


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _steps(budget, clock, first, last, seconds_per_step):
    for step in range(first, last + 1):
        clock.now += seconds_per_step
        budget.step_done(step)


@pytest.mark.parametrize(
    "text, seconds",
    [("15m", 900.0), ("900", 900.0), ("900s", 900.0), ("1.5h", 5400.0),
     (" 45 s ", 45.0), (".5m", 30.0)],
)  # fmt: skip
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text, message",
    [("15 minutes", "must be a duration such as 15m"),
     ("-5m", "must be a duration"), ("nan", "must be a duration"),
     ("", "must be a duration"),
     ("10s", "too short.*Received: time_budget='10s'"),
     ("0", "too short")],
)  # fmt: skip
def test_bad_durations(text, message):
    with pytest.raises(KerasElmoError, match=message):
        parse_duration(text)


def test_the_first_plan_after_the_measured_steps():
    clock = FakeClock()
    budget = TimeBudget(600.0, clock=clock)
    clock.now += 20.0  # start-up: scan, build
    # Steps 1-3 trace and compile (slow, not timed); then 0.5 s a step.
    _steps(budget, clock, 1, 3, 4.0)
    _steps(budget, clock, 4, 22, 0.5)
    assert not budget.ready()  # 19 steps timed, 9.5 s
    _steps(budget, clock, 23, 33, 0.5)
    assert budget.ready()  # 30 steps, 15 s
    total, reason = budget.plan(33)
    spent = 20.0 + 3 * 4.0 + 30 * 0.5
    expected = 33 + int((600.0 * 0.97 - spent) / 0.5)
    assert total == expected == 33 + 1070  # (582 - 47) / 0.5
    assert "0.50 s a step" in reason
    assert reason.endswith(f"training to step {expected:,}")


def test_evaluations_are_planned_and_measured():
    clock = FakeClock()
    budget = TimeBudget(600.0, clock=clock)
    _steps(budget, clock, 1, 43, 0.5)  # 40 timed steps, 20 s
    # Not measured yet: a held-out batch costs 3 steps (1.5 s); 10
    # batches, 15 s an evaluation. Every 400 steps and at the end.
    left = 600.0 * 0.97 - 43 * 0.5
    total, reason = budget.plan(43, 400, 10, 0)
    evaluations = 1 + (total - 1) // 400
    assert total == 43 + int((left - evaluations * 15.0) / 0.5)
    assert evaluations == 3 and "3 evaluation(s) of about 15 s" in reason

    _steps(budget, clock, 44, 400, 0.5)
    budget.evaluation_started()
    clock.now += 40.0  # slower than estimated
    budget.evaluation_done()
    _steps(budget, clock, 401, 420, 0.5)
    total, reason = budget.plan(420, 400, 10, 400)
    # The evaluation is left out of the speed, and counts at its length.
    left = 600.0 * 0.97 - 420 * 0.5 - 40.0
    evaluations = 1 + (total - 1 - 400) // 400
    assert total == 420 + int((left - evaluations * 40.0) / 0.5)
    assert "0.50 s a step" in reason and "of about 40 s" in reason


def test_a_timed_part_of_an_evaluation_stands_for_a_whole_one():
    clock = FakeClock()
    budget = TimeBudget(600.0, clock=clock)
    _steps(budget, clock, 1, 33, 0.5)
    budget.evaluation_started()
    clock.now += 6.0  # 4 held-out batches
    budget.evaluation_done(estimate=1.5 * 75)
    total, reason = budget.plan(33, 400, 75, 0)
    left = 600.0 * 0.97 - 33 * 0.5 - 6.0
    assert total == 33 + int((left - 2 * 112.5) / 0.5)
    assert "2 evaluation(s) of about 112 s" in reason


def test_frequent_evaluations_are_fitted_in():
    # Fast steps, an evaluation every 5 steps costing 150 steps: the last
    # step is the latest whose steps and evaluations fit.
    clock = FakeClock()
    budget = TimeBudget(100.0, clock=clock)
    _steps(budget, clock, 1, 30, 0.02)
    budget.evaluation_started()
    clock.now += 3.0
    budget.evaluation_done()
    _steps(budget, clock, 31, 33, 0.02)
    total, reason = budget.plan(33, 5, 5, 30)
    left = 100.0 * 0.97 - 33 * 0.02 - 3.0

    def cost(last):  # evaluations at 35, 40, ... before `last`, and at it
        count = 1 + len(range(35, last, 5))
        return (last - 33) * 0.02 + count * 3.0

    fitting = [last for last in range(34, 5000) if cost(last) <= left]
    assert total == max(fitting) == 180
    assert "30 evaluation(s) of about 3 s" in reason


def test_plans_between_checkpoints_come_each_minute():
    clock = FakeClock()
    budget = TimeBudget(600.0, clock=clock)
    _steps(budget, clock, 1, 33, 0.5)
    budget.plan(33)
    _steps(budget, clock, 34, 100, 0.5)  # 33.5 s
    assert not budget.due()
    _steps(budget, clock, 101, 160, 0.5)  # 63.5 s
    assert budget.due()
    budget.plan(160)
    assert not budget.due()


def test_a_slower_machine_shortens_the_plan():
    clock = FakeClock()
    budget = TimeBudget(300.0, clock=clock)
    _steps(budget, clock, 1, 33, 0.5)
    first, _ = budget.plan(33)
    _steps(budget, clock, 34, 100, 1.0)  # twice as slow since the plan
    second, reason = budget.plan(100)
    assert second == 100 + int((300.0 * 0.97 - 33 * 0.5 - 67 * 1.0) / 1.0)
    assert second < first and "1.00 s a step" in reason


def _pause_after_plans(per_step, second_plan, last_step, pause):
    """Plans at step 33 and at `second_plan` (steps of `per_step` s),
    then steps to `last_step`, a `pause`, and a third plan: the budget,
    its clock, the second plan and the third."""
    clock = FakeClock()
    budget = TimeBudget(900.0, clock=clock)
    _steps(budget, clock, 1, 33, per_step)
    budget.plan(33)
    _steps(budget, clock, 34, second_plan, per_step)
    assert budget.due()
    second = budget.plan(second_plan)
    _steps(budget, clock, second_plan + 1, last_step, per_step)
    clock.now += pause
    return budget, clock, second, budget.plan(last_step)


def test_a_pause_soon_after_a_plan_is_not_taken_for_the_speed():
    # A checkpoint a few steps after a plan: its pause (writing, refilling
    # the shuffle buffer) over 5 steps once read 2.9 s a step and ended a
    # run at a third of its budget.
    budget, clock, (before, _), (after, reason) = _pause_after_plans(
        0.5, 160, 165, 12.0
    )
    # Measured over both stretches: (127 + 5 steps of 0.5 s + 12 s) / 132.
    assert "0.59 s a step" in reason
    assert after > 0.8 * before
    # A long enough stretch alone sets the speed again.
    _steps(budget, clock, 166, 300, 0.25)
    assert "0.25 s a step" in budget.plan(300)[1]


def test_a_pause_in_a_short_stretch_after_a_plan_is_spread_out():
    # The word twin's epoch start: 46 steps of 0.21 s and an 8 s pause
    # 18 s after a plan once read 0.39 s a step.
    _, _, _, (_, reason) = _pause_after_plans(0.21, 320, 366, 8.0)
    # (333 steps of 0.21 s + 8 s) / 333 steps.
    assert "0.23 s a step" in reason


def test_an_exhausted_budget_ends_at_the_next_step():
    clock = FakeClock()
    budget = TimeBudget(60.0, clock=clock)
    _steps(budget, clock, 1, 3, 1.0)
    assert not budget.ready()
    _steps(budget, clock, 4, 5, 30.0)  # half the budget spent
    assert budget.ready()
    assert budget.plan(5)[0] == 6
    # Without a timed step since the last plan there is nothing to plan.
    assert budget.plan(5) is None


def test_a_resumed_budget_counts_the_earlier_part():
    clock = FakeClock()
    budget = TimeBudget(600.0, spent=500.0, clock=clock)
    _steps(budget, clock, 1001, 1033, 0.5)
    total, _ = budget.plan(1033)
    assert total == 1033 + int((600.0 * 0.97 - 500.0 - 33 * 0.5) / 0.5)


def _train_args(output, *extra):
    from tests.helpers import FIXTURES
    from tests.helpers import TINY_TRAIN_FLAGS

    data = os.path.join(FIXTURES, "train", "data.txt")
    return [
        "train",
        "--train", data,
        "--validation", data,
        "--vocab", os.path.join(FIXTURES, "train", "vocab.txt"),
        "--output", str(output),
        *TINY_TRAIN_FLAGS,
        "--tokens-per-batch", "64",
        "--num-sampled", "8",
        "--checkpoint-every", "10",
        *extra,
    ]  # fmt: skip


@pytest.mark.large
def test_a_budgeted_run_ends_at_its_plan_and_in_time(
    tmp_path, capsys, monkeypatch
):
    from keras_elmo_cli import main

    monkeypatch.setattr(time_budget, "FIRST_PLAN_SECONDS", 2.0)
    run = tmp_path / "run"
    started = time.monotonic()
    assert main(_train_args(run, "--time-budget", "40s")) == 0
    wall = time.monotonic() - started
    printed = capsys.readouterr().out
    assert "training from step 1 for a time budget of 0." in printed
    assert "s a step" in printed and "-> training to step" in printed
    with open(run / "time_budget.json") as f:
        plan = json.load(f)
    with open(run / "checkpoint" / "meta.json") as f:
        step = json.load(f)["step"]
    with open(run / "history.json") as f:
        history = json.load(f)
    # It ran to its last plan, evaluated there, and the rate decayed to
    # zero there (how many steps fit depends on the machine).
    assert plan["total_steps"] == step == history[-1]["step"] >= 1
    assert plan["schedule"]["end_step"] == step
    # The budget is wall time, start-up included (a loaded machine may
    # slow the last steps after the plan). Where start-up alone spent the
    # budget (a heavily loaded machine), the run stops one step after its
    # first plan, whatever the time.
    plans = re.findall(r"time budget: (.*?) left, .* step ([\d,]+)", printed)
    if plans[0][0] == "0 s":
        assert len(plans) == 1 and int(plans[0][1].replace(",", "")) == step
    else:
        assert wall < 40 + 15, printed
        assert plan["spent_s"] < 40 + 15

    # The same command again finds the plan done.
    assert main(_train_args(run, "--time-budget", "40s")) == 0
    assert f"already trained {step:,} steps" in capsys.readouterr().out


def test_a_budget_and_another_length_are_refused(tmp_path, capsys):
    from keras_elmo_cli import main

    args = _train_args(tmp_path / "r", "--time-budget", "1m", "--epochs", "2")
    assert main(args) != 0
    assert (
        "--epochs and --time-budget both give the length of the run"
        in capsys.readouterr().err
    )
    assert main(_train_args(tmp_path / "r", "--time-budget", "5s")) == 2
    err = capsys.readouterr().err
    assert "--time-budget is too short" in err
    assert "Received: --time-budget 5s." in err
    assert not (tmp_path / "r").exists()


def test_a_damaged_plan_is_named(tmp_path, capsys):
    from keras_elmo_cli import main

    run = tmp_path / "run"
    assert main(_train_args(run, "--steps", "10", "--quiet")) == 0
    (run / "time_budget.json").write_text('{"total_steps": "many"}')
    assert main(_train_args(run, "--steps", "20", "--quiet")) != 0
    error = capsys.readouterr().err
    assert "time_budget.json is damaged" in error
    assert "`total_steps` must be an integer >= 1" in error
    assert error.rstrip().endswith("Received: 'many'.")


@pytest.mark.parametrize("text", ["9" * 400, "100000h", "9" * 20])
def test_a_budget_beyond_a_year_is_too_long_not_too_short(text):
    with pytest.raises(KerasElmoError, match="is too long: at most 8784h"):
        parse_duration(text)
