"""Agreement statistics against hand-computed examples (the arithmetic is in the comments)."""

import math

import pytest

from pytest_hypeedit.analysis import agreement as ag
from pytest_hypeedit.labels import Panel, RaterLabels

# A 2x2 table of n = 50 candidates:
#                 panel PASS  panel FAIL
#   judge PASS        20          10        row 30 -> 0.6
#   judge FAIL         5          15        row 20 -> 0.4
#   columns           25 (0.5)    25 (0.5)
TABLE = ag.Confusion(both_pass=20, false_pass=10, false_fail=5, both_fail=15)


def test_agreement_and_kappa_by_hand():
    # p_o = (20 + 15) / 50 = 0.7;  p_e = 0.6*0.5 + 0.4*0.5 = 0.5;  kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert ag.agreement_rate(TABLE) == pytest.approx(0.7)
    assert ag.cohen_kappa(TABLE) == pytest.approx(0.4)
    # false-fail = judge FAIL among panel PASS = 5 / 25;  false-pass = judge PASS among panel FAIL = 10 / 25
    assert ag.false_fail_rate(TABLE) == pytest.approx(0.2)
    assert ag.false_pass_rate(TABLE) == pytest.approx(0.4)


def test_kappa_interval_fleiss_cohen_everitt_by_hand():
    # Proportions p = [[0.4, 0.2], [0.1, 0.3]], rows (judge) 0.6/0.4, columns (panel) 0.5/0.5, kappa 0.4.
    # A = sum_i p_ii [1 - (p_i. + p_.i)(1 - kappa)]^2 = 0.4*(1 - 1.1*0.6)^2 + 0.3*(1 - 0.9*0.6)^2
    #   = 0.4*0.1156 + 0.3*0.2116 = 0.10972
    # B = (1 - kappa)^2 sum_{i!=j} p_ij (p_.i + p_j.)^2 = 0.36*(0.2*(0.5+0.4)^2 + 0.1*(0.5+0.6)^2)
    #   = 0.36*(0.162 + 0.121) = 0.10188
    # C = (kappa - p_e(1 - kappa))^2 = (0.4 - 0.5*0.6)^2 = 0.01
    # var = (A + B - C) / (n (1 - p_e)^2) = 0.2016 / (50*0.25) = 0.016128;  se = 0.126996
    se = math.sqrt(0.016128)
    assert ag.kappa_standard_error(TABLE) == pytest.approx(se)
    low, high = ag.kappa_interval(TABLE)
    # 0.4 -/+ 1.95996 * 0.126996 = 0.4 -/+ 0.248908
    assert low == pytest.approx(0.151092, abs=1e-5)
    assert high == pytest.approx(0.648908, abs=1e-5)


def test_confusion_counts_pairs_and_perfect_agreement():
    table = ag.confusion([(True, True), (True, False), (False, True), (False, False), (True, True)])
    assert (table.both_pass, table.false_pass, table.false_fail, table.both_fail) == (2, 1, 1, 1)
    perfect = ag.Confusion(both_pass=3, both_fail=2)
    # p_o = 1, p_e = 0.6*0.6 + 0.4*0.4 = 0.52, kappa = 1; the SE is 0 and the interval collapses to [1, 1]
    assert ag.cohen_kappa(perfect) == pytest.approx(1.0)
    assert ag.kappa_interval(perfect) == pytest.approx((1.0, 1.0))


def test_undefined_figures_are_none_not_nan():
    assert ag.cohen_kappa(ag.Confusion()) is None
    # Everyone says PASS: p_e = 1, kappa undefined; no panel FAIL, so no false-pass rate.
    only_pass = ag.Confusion(both_pass=4)
    assert ag.cohen_kappa(only_pass) is None and ag.kappa_interval(only_pass) is None
    assert ag.false_pass_rate(only_pass) is None and ag.false_fail_rate(only_pass) == 0


def test_by_task_type_counts_a_multi_type_candidate_in_each():
    pairs = [(True, True, ("text",)), (False, True, ("text", "colour")), (True, False, ("colour",))]
    report = ag.compare_by_task_type(pairs)
    assert list(report) == ["all", "colour", "text"]
    assert report["all"]["n"] == 3
    assert report["text"]["confusion"] == {"both_pass": 1, "false_pass": 0, "false_fail": 1, "both_fail": 0}
    assert report["colour"]["false_pass_rate"] == 1.0 and report["colour"]["false_fail_rate"] == 1.0
    assert report["text"]["agreement"] == pytest.approx(0.5)


def test_krippendorff_alpha_by_hand():
    # Units: PPP, PPF, FFF, PF (2 votes), P (1 vote: not pairable, dropped).
    # o_PF = sum_u P_u F_u / (m_u - 1) = 0 + 2*1/2 + 0 + 1*1/1 = 2
    # n_P = 3+2+0+1 = 6, n_F = 0+1+3+1 = 5, n = 11
    # alpha = 1 - (n - 1) o_PF / (n_P n_F) = 1 - 10*2/30 = 1/3
    units = [[True] * 3, [True, True, False], [False] * 3, [True, False], [True]]
    assert ag.krippendorff_alpha(units) == pytest.approx(1 / 3)
    assert ag.krippendorff_alpha([[True, True], [False, False]]) == pytest.approx(1.0)
    assert ag.krippendorff_alpha([[True, True], [True]]) is None


def test_fleiss_kappa_by_hand():
    # 4 units x 3 raters, PASS counts 3, 2, 0, 1: p_PASS = 6/12 = 0.5, P_e = 0.25 + 0.25 = 0.5
    # P_i = (k^2 + (3-k)^2 - 3) / 6 = 1, 1/3, 1, 1/3 -> mean 2/3;  kappa = (2/3 - 1/2) / (1/2) = 1/3
    units = [[True] * 3, [True, True, False], [False] * 3, [True, False, False]]
    assert ag.fleiss_kappa(units) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="same number"):
        ag.fleiss_kappa([[True, True], [True, False, True]])


def _rater(name, verdicts):
    return RaterLabels(rater=name, path=None, verdicts=verdicts)


def test_three_raters_majority_feeds_the_metrics():
    a, b = ("t1", "m", 1), ("t1", "m", 2)
    panel = Panel([_rater("ann", {a: True, b: False}), _rater("bob", {a: True, b: True}),
                   _rater("cy", {a: False, b: False})])
    # a: 2 PASS of 3 -> PASS;  b: 1 PASS of 3 -> FAIL
    assert panel.verdict(*a).passed and not panel.verdict(*b).passed
    assert panel.even_vote_warnings() == []
    judge = {a: False, b: False}  # the judge fails both: one false fail, one agreement
    pairs = [(judge[k], panel.verdict(*k).passed, ("text",)) for k in (a, b)]
    report = ag.compare_by_task_type(pairs)["all"]
    assert report["confusion"] == {"both_pass": 0, "false_pass": 0, "false_fail": 1, "both_fail": 1}
    assert report["false_fail_rate"] == 1.0 and report["agreement"] == 0.5
    between = ag.raters_summary(panel.votes(), panel_size=3)
    # Units PPF and PFF: o_PF = 2*1/2 + 1*2/2 = 2, n_P = 3, n_F = 3, n = 6: alpha = 1 - 5*2/9 = -1/9
    assert between["krippendorff_alpha"] == pytest.approx(-1 / 9)
    assert between["fleiss_units"] == 2


def test_summary_lines_show_the_figures():
    report = {"judge": "gemini-3-flash", "panel": {"raters": 3},
              "by_task_type": ag.compare_by_task_type([(True, True, ("text",)), (False, False, ("text",)),
                                                        (True, False, ("text",))]),
              "between_raters": {"krippendorff_alpha": 0.5, "units": 3, "fleiss_kappa": None, "fleiss_units": 0},
              "warnings": ["task t model m repeat 001: 2 votes"]}
    text = "\n".join(ag.summary_lines(report))
    assert "66.7%" in text and "Fleiss-Cohen-Everitt" in text and "alpha 0.50" in text
    assert "warning: task t model m repeat 001" in text
