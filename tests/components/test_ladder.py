"""The ladder's rules (components/ladder.py): rungs, the next rung, valid rollback targets."""

from __future__ import annotations

import pytest

from components import ladder

LADDER = (0, 5, 20, 50, 80, 100)


@pytest.mark.parametrize(
    "rungs", [(0, 5, 5, 100), (5, 100), (0, 50), (0, 50, 20, 100), (), (100, 0)]
)
def test_a_ladder_rises_strictly_from_0_to_100(rungs: tuple[int, ...]) -> None:
    assert ladder.shape_problem(rungs) == (
        "must rise strictly from 0 to 100, e.g. [0, 5, 20, 50, 80, 100]"
    )
    assert ladder.shape_problem(LADDER) is None
    assert ladder.shape_problem((0, 100)) is None


def test_position_and_next_rung() -> None:
    assert [ladder.position(LADDER, w) for w in LADDER] == [0, 1, 2, 3, 4, 5]
    assert [ladder.next_rung(LADDER, w) for w in LADDER] == [5, 20, 50, 80, 100, None]
    assert ladder.position_text(LADDER, 20) == "2/5"
    assert ladder.position_text((0, 100), 100) == "1/1"
    with pytest.raises(ValueError):
        ladder.next_rung(LADDER, 7)


def test_marked_brackets_one_rung() -> None:
    assert ladder.marked(LADDER, 5) == "0 [5] 20 50 80 100"
    assert ladder.marked(LADDER, -1) == "0 5 20 50 80 100"


def test_a_step_must_be_a_rung() -> None:
    assert ladder.step_problem(LADDER, 20) is None
    assert ladder.step_problem(LADDER, 7) == "not a ladder step; allowed: 0, 5, 20, 50, 80, 100"
    assert ladder.step_problem((0, 100), 7, " of stack prod") == (
        "not a ladder step of stack prod; allowed: 0, 100"
    )


def test_a_rollback_goes_to_a_rung_at_or_below_the_weight() -> None:
    assert ladder.rollback_problem(LADDER, 50, 20) is None
    assert ladder.rollback_problem(LADDER, 50, 50) is None
    assert ladder.rollback_problem(LADDER, 50, 0) is None
    assert ladder.rollback_problem(LADDER, 20, 50) == (
        "above the current weight 20%; rollback only lowers the weight, use "
        "`dualstack promote` to raise it"
    )
    assert ladder.rollback_problem(LADDER, 20, 50, "service chat's weight").startswith(
        "above service chat's weight 20%;"
    )
    assert ladder.rollback_problem(LADDER, 20, 7, where=" of stack prod") == (
        "not a ladder step of stack prod; allowed: 0, 5, 20, 50, 80, 100"
    )
    # None: the rung alone (rollback --all keeps a service already below `to`)
    assert ladder.rollback_problem(LADDER, None, 80) is None
    assert ladder.rollback_problem(LADDER, None, 7) == (
        "not a ladder step; allowed: 0, 5, 20, 50, 80, 100"  # no owner named unless given
    )
