"""The accuracy mode: scoring against reference answers, Wilson and Newcombe intervals checked
against published values, and the verdict against local servers that know the answers."""

from __future__ import annotations

import re
from statistics import NormalDist

import pytest

import precision_check as checker
from precision_check.accuracy import Accuracy, is_correct, normalise, paired_difference, wilson
from precision_check.output import metrics_text
from tests.support.precision_servers import WRONG, Behaviour, OpenAIServer, refused_url, run_main

ITEMS = checker.load_prompts(None, "accuracy")
ORACLE = {p.prompt: p.answers[0] for p in ITEMS}
"""Each bundled question -> its first accepted answer: what a right backend says."""
EVERY_FIFTH = {p.prompt for p in ITEMS[::5]}
"""20 of the 100 items."""


# --- the statistics, against published values --------------------------------------------


@pytest.mark.parametrize(
    ("successes", "n", "expected"),
    [(81, 263, (0.2553, 0.3662)), (15, 148, (0.0624, 0.1605)), (0, 20, (0.0, 0.1611)),
     (1, 29, (0.0061, 0.1718))],
)  # fmt: skip
def test_wilson_interval_matches_newcombe_1998(successes, n, expected):
    """Newcombe (1998), Stat Med 17:857, table II, method 3 (score interval)."""
    assert tuple(round(v, 4) for v in wilson(successes, n)) == expected


def test_paired_difference_matches_fagerland_et_al():
    """Fagerland, Lydersen and Laake (2017), ch. 8, Cavo et al. (2012): the table 59, 6 / 16,
    80 gives -0.0621 (95 % CI -0.1186 to -0.0046) with the Newcombe square-and-add interval
    (the `contingencytables` R package's tests quote the same)."""
    low, high = paired_difference(a=59, b=16, c=6, d=80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


@pytest.mark.parametrize(
    ("text", "answers", "right"),
    [
        (" 248\nQuestion: What is 3 + 4?", ["248"], True),
        ("**Paris**.", ["Paris"], True),
        ("Answer: Stockholm", ["Stockholm"], True),
        (" 1,234", ["1234"], True),
        ("\n\n  Eight legs", ["8", "eight"], False),
        ("The answer is 248.", ["248"], False),
        (" 2481", ["248"], False),
        ("Shakespeare wrote it", ["William Shakespeare", "Shakespeare"], False),
    ],
)
def test_an_answer_is_right_only_when_its_first_line_is_a_reference(text, answers, right):
    assert is_correct(text, answers) is right


def test_normalised_form():
    assert normalise(" **1,234.**\nQ: 5") == "1234"
    assert normalise("  The  Pacific\tOcean ") == "the pacific ocean"


def test_the_bundled_items_are_distinct_and_their_arithmetic_is_right():
    """Every arithmetic answer re-derived from its question here, not from the file."""
    assert len(ITEMS) == len({p.prompt for p in ITEMS}) == 100
    assert all(p.answers and p.prompt.endswith("\nAnswer:") for p in ITEMS)
    operations = {"+": int.__add__, "-": int.__sub__, "*": int.__mul__, "/": int.__floordiv__}
    checked = 0
    for p in ITEMS:
        if found := re.search(r"What is (\d+) ([-+*/]) (\d+)\?", p.prompt):
            a, op, b = int(found[1]), found[2], int(found[3])
            assert op != "/" or a % b == 0
            assert p.answers == (str(operations[op](a, b)),), p.id
            checked += 1
        elif found := re.search(r"What is (\d+) squared\?", p.prompt):
            assert p.answers == (str(int(found[1]) ** 2),)
            checked += 1
    assert checked == 48


# --- the mode against servers that know the answers --------------------------------------


def test_identical_right_answers_pass_the_accuracy_mode(capsys, tmp_path):
    right = Behaviour(answers=ORACLE)
    with OpenAIServer(right) as nvidia, OpenAIServer(right) as ascend:
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--mode", "accuracy")
    assert (result.code, result.err) == (0, [])
    accuracy = result.report["accuracy"]
    assert accuracy["verdict"] == "pass" and accuracy["items"] == 100
    assert accuracy["backends"]["ascend"] == {
        "correct": 100,
        "accuracy": 100,
        "wilson95": [96.3, 100],
    }
    assert result.out.startswith(
        "precision check PASS: accuracy nvidia 100.0 % [96.3, 100.0], ascend 100.0 % [96.3, "
        "100.0] on 100 items in accuracy mode"
    )
    assert len(ascend.requests) == 100 and "logprobs" not in ascend.requests[0]


def test_the_same_wrong_answers_on_both_pass(capsys, tmp_path):
    """Both miss the same 20 items: no difference, and the pairing shows it (an unpaired
    interval of two 80 % accuracies would be ±11 points, inconclusive at 5)."""
    weak = Behaviour(answers=ORACLE, wrong=EVERY_FIFTH.__contains__)
    with OpenAIServer(weak) as nvidia, OpenAIServer(weak) as ascend:
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--mode", "accuracy")
    assert result.code == 0
    assert result.report["accuracy"]["table"] == {
        "both": 80,
        "nvidiaOnly": 0,
        "ascendOnly": 0,
        "neither": 20,
    }
    low, high = result.report["accuracy"]["difference95"]
    assert -5 < low < 0 < high < 5


def test_a_less_accurate_ascend_fails_with_enough_items(capsys, tmp_path):
    """Ascend misses 20 of the 100 items NVIDIA gets right: 80 % against 100 %."""
    with (
        OpenAIServer(Behaviour(answers=ORACLE)) as nvidia,
        OpenAIServer(Behaviour(answers=ORACLE, wrong=EVERY_FIFTH.__contains__)) as ascend,
    ):
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--mode", "accuracy")
    assert (result.code, result.err) == (1, [])
    accuracy = result.report["accuracy"]
    assert result.report["status"] == "mismatch" and accuracy["verdict"] == "fail"
    assert accuracy["backends"]["nvidia"]["wilson95"] == [96.3, 100]
    assert accuracy["backends"]["ascend"] == {
        "correct": 80,
        "accuracy": 80,
        "wilson95": [71.12, 86.66],
    }
    assert accuracy["differencePoints"] == -20 and accuracy["difference95"] == [-28.88, -12.38]
    assert result.report["reasons"] == [
        "ascend is below nvidia by more than 5 points (95 % interval of ascend - nvidia "
        "[-28.9, -12.4] points)"
    ]
    mismatch = result.report["mismatches"][0]
    assert (mismatch["prompt_id"], mismatch["ascend"]) == (ITEMS[0].id, f" {WRONG}\n")
    assert mismatch["detail"] == f"expected {ITEMS[0].answers[0]!r}: only nvidia is right"
    assert "- **Ascend − NVIDIA**: -20.0 points (95 % -28.9 to -12.4; tolerance 5)" in (
        result.markdown
    )


def test_the_same_margin_on_too_few_items_is_inconclusive(capsys, tmp_path):
    """10 items, Ascend misses 2: the 95 % interval of the difference, -51 to +11 points,
    cannot tell. That is exit 1 and never a pass."""
    items = tmp_path / "items.jsonl"
    items.write_text(checker.to_jsonl(ITEMS[:10]))
    wrong = {ITEMS[0].prompt, ITEMS[5].prompt}.__contains__
    with (
        OpenAIServer(Behaviour(answers=ORACLE)) as nvidia,
        OpenAIServer(Behaviour(answers=ORACLE, wrong=wrong)) as ascend,
    ):
        flags = ("--mode", "accuracy", "--prompts", str(items))
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert (result.code, result.err) == (1, [])
    assert result.report["status"] == "inconclusive" and result.report["passed"] is False
    assert result.report["accuracy"]["difference95"] == [-50.98, 11.24]
    assert result.out.startswith("precision check INCONCLUSIVE: accuracy nvidia 100.0 %")
    assert (
        "  inconclusive: 10 items are too few to tell whether ascend is within 5 points of "
        "nvidia (95 % interval of ascend - nvidia [-51.0, +11.2] points); use more items"
    ) in result.out.splitlines()


def test_nvidia_right_on_nothing_is_inconclusive(capsys, tmp_path):
    """A model that gets no item right on the reference hardware is not measured by them."""
    wrong = Behaviour(answers=ORACLE, wrong=lambda _text: True)
    with OpenAIServer(wrong) as nvidia, OpenAIServer(wrong) as ascend:
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--mode", "accuracy")
    assert (result.code, result.report["status"]) == (1, "inconclusive")
    assert result.report["reasons"][0].startswith("nvidia answered none of the 100 items right")


def test_prompts_without_answers_cannot_run_the_accuracy_mode(capsys, tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "prompt": "2+2?", "answer": "4"}\n"Name a colour."\n')
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        flags = ("--mode", "accuracy", "--prompts", str(items))
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert result.code == 2 and nvidia.requests == []
    assert result.err == [
        "error: prompt p02 has no reference `answer`: the accuracy mode needs one on every "
        "prompt (or use the built-in set: no --prompts)"
    ]


def accuracy_report(both: int, nvidia_only: int) -> checker.Report:
    options = checker.Options(nvidia="http://n:8000", ascend="http://a:8000", mode="accuracy")
    report = checker.Report(options, prompts=both + nvidia_only, compared=both + nvidia_only)
    report.accuracy = Accuracy(both, nvidia_only, 0, 0, tolerance=5.0)
    return report


def test_accuracy_metrics_carry_each_backends_numbers():
    text = metrics_text(accuracy_report(80, 20))
    assert 'precision_check_accuracy_ratio{mode="accuracy",hardware="ascend"} 0.8\n' in text
    assert 'precision_check_accuracy_lower_ratio{mode="accuracy",hardware="ascend"} 0.71' in text
    assert 'precision_check_accuracy_upper_ratio{mode="accuracy",hardware="nvidia"} 1.0\n' in text
    assert text.count("# TYPE precision_check_accuracy_ratio gauge") == 1
    assert 'precision_check_passed{mode="accuracy"} 0\n' in text
    assert 'precision_check_inconclusive{mode="accuracy"} 0\n' in text


def test_an_inconclusive_run_pushes_passed_0_and_inconclusive_1():
    text = metrics_text(accuracy_report(8, 2))
    assert 'precision_check_passed{mode="accuracy"} 0\n' in text
    assert 'precision_check_inconclusive{mode="accuracy"} 1\n' in text
    assert 'precision_check_completed{mode="accuracy"} 1\n' in text


def test_an_accuracy_run_that_could_not_complete_is_exit_2(capsys, tmp_path):
    with OpenAIServer(Behaviour(answers=ORACLE)) as nvidia:
        flags = ("--mode", "accuracy", "--retries", "0")
        result = run_main(capsys, tmp_path, nvidia.url, refused_url(), *flags)
    assert result.code == 2 and result.report["status"] == "error"
    assert re.match(r"precision check ERROR: \d+/100 items scored in accuracy mode\n", result.out)
    assert result.err[0].startswith("error: ascend ") and "Connection refused" in result.err[0]


# --- edges and the report section, by hand ----------------------------------------------------


def test_no_items_give_the_widest_intervals_and_a_zero_rate():
    assert wilson(0, 0) == (0.0, 1.0)
    assert paired_difference(0, 0, 0, 0) == (-1.0, 1.0)
    empty = Accuracy(0, 0, 0, 0, tolerance=5.0)
    assert (empty.rate("nvidia"), empty.rate("ascend")) == (0.0, 0.0)
    assert empty.verdict == "inconclusive"


def test_a_99_percent_interval_is_wider_than_the_95_percent_one():
    z99 = 2.5758293035489
    low95, high95 = paired_difference(a=59, b=16, c=6, d=80)
    low99, high99 = paired_difference(a=59, b=16, c=6, d=80, z=z99)
    assert low99 < low95 and high99 > high95
    assert (round(low99, 4), round(high99, 4)) != (round(low95, 4), round(high95, 4))


def test_the_report_section_of_80_items():
    """60 of 80 right on NVIDIA (75 %), 54 on Ascend (67.5 %): 7.5 points lower. Wilson 60/80
    by hand: centre (0.75 + 1.96^2/160) / (1 + 1.96^2/80) = 0.7386, half-width 0.0934."""
    section = Accuracy(both=50, nvidia_only=10, ascend_only=4, neither=16, tolerance=5.0).to_json()
    assert section == {
        "items": 80,
        "tolerancePoints": 5.0,
        "verdict": "inconclusive",
        "reason": (
            "inconclusive: 80 items are too few to tell whether ascend is within 5 points of "
            "nvidia (95 % interval of ascend - nvidia [-16.8, +1.9] points); use more items"
        ),
        "backends": {
            "nvidia": {"correct": 60, "accuracy": 75.0, "wilson95": [64.52, 83.19]},
            "ascend": {"correct": 54, "accuracy": 67.5, "wilson95": [56.64, 76.76]},
        },
        "differencePoints": -7.5,
        "difference95": [-16.79, 1.88],
        "table": {"both": 50, "nvidiaOnly": 10, "ascendOnly": 4, "neither": 16},
    }


# --- each branch of the paired interval, against a reference written out independently -----

Z95 = 1.959963984540054
"""The two-sided 95 % normal quantile (tables: 1.95996)."""


def reference_wilson(successes: int, n: int, z: float) -> tuple[float, float]:
    """Newcombe (1998), Stat Med 17:857, method 3, in its closed form:
    (2np + z^2 -/+ z sqrt(z^2 + 4npq)) / (2 (n + z^2))."""
    p = successes / n
    root = z * (z * z + 4 * n * p * (1 - p)) ** 0.5
    denominator = 2 * (n + z * z)
    return (2 * n * p + z * z - root) / denominator, (2 * n * p + z * z + root) / denominator


def reference_newcombe(n11: int, n12: int, n21: int, n22: int, z: float = Z95):
    """Newcombe (1998), Stat Med 17:2635, method 10, in Fagerland, Lydersen and Laake (2017)
    ch. 8 notation: n11 both right, n12 only the first right, n21 only the second right,
    n22 neither; p1 = n1+/n, p2 = n+1/n. The continuity-corrected phi: 0 when a margin is 0;
    (n11 n22 - n12 n21 - n/2)/sqrt(margins) when n11 n22 > n12 n21 + n/2; 0 when
    n12 n21 <= n11 n22 <= n12 n21 + n/2; else (n11 n22 - n12 n21)/sqrt(margins). No clipping:
    use it where the interval lies inside -1..1."""
    n = n11 + n12 + n21 + n22
    row1, row2, col1, col2 = n11 + n12, n21 + n22, n11 + n21, n12 + n22
    p1, p2 = row1 / n, col1 / n
    l1, u1 = reference_wilson(row1, n, z)
    l2, u2 = reference_wilson(col1, n, z)
    if row1 * row2 * col1 * col2 == 0:
        phi = 0.0
    elif n11 * n22 > n12 * n21 + n / 2:
        phi = (n11 * n22 - n12 * n21 - n / 2) / (row1 * row2 * col1 * col2) ** 0.5
    elif n12 * n21 <= n11 * n22:
        phi = 0.0
    else:
        phi = (n11 * n22 - n12 * n21) / (row1 * row2 * col1 * col2) ** 0.5
    delta = ((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2) ** 0.5
    epsilon = ((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2) ** 0.5
    return p1 - p2 - delta, p1 - p2 + epsilon


def ours(n11: int, n12: int, n21: int, n22: int, z: float = Z95) -> tuple[float, float]:
    """paired_difference on the same table: its `a` both, `b` only the second, `c` only the
    first right."""
    return paired_difference(a=n11, b=n21, c=n12, d=n22, z=z)


def test_the_reference_reproduces_the_published_paired_interval():
    """The reference itself against Fagerland et al. (2017) ch. 8 (Cavo et al. 2012)."""
    low, high = reference_newcombe(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_a_positive_association_above_n_over_2_is_reduced_by_n_over_2():
    """n11 n22 - n12 n21 = 2 on 3 items (between n/2 and 2n): phi = (2 - 1.5)/sqrt(1*2*1*2)
    = 0.25, so the interval is narrower than with no correlation."""
    assert ours(1, 0, 0, 2) == pytest.approx(reference_newcombe(1, 0, 0, 2), abs=1e-9)
    assert ours(1, 0, 0, 2) == pytest.approx((-0.4714, 0.4714), abs=1e-4)
    assert ours(3, 1, 1, 5) == pytest.approx(reference_newcombe(3, 1, 1, 5), abs=1e-9)


@pytest.mark.parametrize(
    "table",
    [(1, 1, 0, 1), (1, 2, 0, 2), (1, 0, 1, 2), (2, 1, 1, 2)],
    ids=["1-of-1.5", "2-of-2.5", "2-of-2", "3-of-3"],
)
def test_a_positive_association_up_to_n_over_2_counts_as_no_correlation(table):
    """0 < n11 n22 - n12 n21 <= n/2: phi is 0 (the correction takes it all), not negative."""
    assert ours(*table) == pytest.approx(reference_newcombe(*table), abs=1e-9)


def test_one_right_answer_each_on_two_items_has_phi_minus_1_and_no_correction():
    """The table 0, 1 / 1, 0: perfect negative association, phi = -1 (not reduced by n/2),
    so each half-width is the sum of the two Wilson half-widths of 1/2:
    z/(1 + z^2/2) sqrt(1/8 + z^2/16) = 0.40547 each."""
    half = Z95 / (1 + Z95**2 / 2) * (1 / 8 + Z95**2 / 16) ** 0.5
    assert half == pytest.approx(0.40547, abs=1e-5)
    assert ours(0, 1, 1, 0) == pytest.approx((-2 * half, 2 * half), abs=1e-9)
    assert Accuracy(0, 1, 1, 0, tolerance=5.0).verdict == "inconclusive"


@pytest.mark.parametrize("table", [(2, 4, 5, 1), (10, 12, 9, 3), (0, 3, 2, 1)])
def test_a_negative_association_is_used_as_is(table):
    assert ours(*table) == pytest.approx(reference_newcombe(*table), abs=1e-9)


def test_the_requested_z_sets_both_wilson_intervals():
    """99 %: z = 2.5758 for both proportions, against the reference; z = 0 shrinks both
    Wilson intervals to their point, so the interval is the point difference -10/161."""
    z99 = NormalDist().inv_cdf(0.995)
    expected = reference_newcombe(59, 6, 16, 80, z=z99)
    assert ours(59, 6, 16, 80, z=z99) == pytest.approx(expected, abs=1e-9)
    assert paired_difference(a=59, b=16, c=6, d=80, z=0.0) == pytest.approx(
        (-10 / 161, -10 / 161), abs=1e-12
    )


def test_an_all_or_nothing_table_stays_within_minus_and_plus_100_points():
    """NVIDIA right on all 13 items and Ascend on none: the difference is -1 and its interval
    [-1, -1 + sqrt(2) z^2/(13 + z^2)] (phi = 0, a margin is 0; the Wilson limits of 0/13 and
    13/13 are 0, z^2/(n + z^2) and n/(n + z^2), 1). The lower end is -1 exactly, though the
    floating-point sum falls a hair below it."""
    width = 2**0.5 * Z95**2 / (13 + Z95**2)
    low, high = paired_difference(a=0, b=13, c=0, d=0)
    assert low == -1.0 and high == pytest.approx(-1 + width, abs=1e-9)
    low, high = paired_difference(a=0, b=0, c=13, d=0)
    assert high == 1.0 and low == pytest.approx(1 - width, abs=1e-9)
    worse = Accuracy(both=0, nvidia_only=13, ascend_only=0, neither=0, tolerance=5.0)
    assert worse.difference_interval[0] >= -100.0 and worse.verdict == "fail"


@pytest.mark.parametrize("n", [1, 9, 26, 30, 100])
def test_the_wilson_interval_of_all_right_ends_at_exactly_1(n):
    """x = n: the limits are n/(n + z^2) and 1 (9/9 and 26/26 sum to a hair above 1)."""
    assert wilson(n, n) == (pytest.approx(n / (n + Z95**2), abs=1e-12), 1.0)
    assert wilson(n, n)[1] <= 1.0


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n "])
def test_an_empty_or_blank_answer_normalises_to_nothing(text):
    assert normalise(text) == ""
    assert not is_correct(text, ["xxxx"])


def test_the_report_section_rounds_rates_and_the_difference_to_hundredths():
    """2 of 3 right on NVIDIA, 1 of 3 on Ascend: 66.666... % and 33.333... %, 33.333...
    points lower, reported as 66.67, 33.33 and -33.33."""
    section = Accuracy(both=1, nvidia_only=1, ascend_only=0, neither=1, tolerance=5.0).to_json()
    assert section["backends"]["nvidia"]["accuracy"] == 66.67
    assert section["backends"]["ascend"]["accuracy"] == 33.33
    assert section["differencePoints"] == -33.33
    assert section["verdict"] == "inconclusive"
