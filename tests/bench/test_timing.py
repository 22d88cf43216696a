"""The timing harness's rounds and ratios, and measure_plan timed in rounds."""

import pytest

from sphgpu.bench import Ratio, Timing, ratio, time_interleaved


def test_rounds_call_every_function_once_each_after_the_warm_up():
    order, seen = [], []
    t = time_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                         repeat=3, warmup=1, progress=lambda f, text: seen.append((f, text)))
    assert order == ["a", "b"] * 4                          # 1 warm-up round, 3 timed
    assert [len(t[k].seconds) for k in "ab"] == [3, 3]
    assert seen[0] == (0.0, "warm-up 1 of 1: a") and seen[-1] == (1.0, "timed")
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)


def test_rounds_stop_once_the_time_is_spent_but_one_is_always_timed():
    t = time_interleaved({"a": lambda: None}, repeat=50, warmup=0, max_seconds=0.0)
    assert len(t["a"].seconds) == 1


def test_ratio_of_rounds_and_its_text():
    r = ratio(Timing([2.0, 4.0, 3.0]), Timing([1.0, 1.0, 2.0]))
    assert r.values == [2.0, 4.0, 1.5] and r.median == 2.0 and (r.low, r.high) == (1.5, 4.0)
    assert r.text() == "2x (1.5x to 4x over 3 pairs)"
    # a range of one value says one value, and one pair says it has no spread
    assert Ratio([4815.67, 4815.67]).text() == "4.82e+03x (all 2 pairs 4.82e+03x)"
    assert Ratio([3.0]).text() == "3x (one pair: no spread)"
    with pytest.raises(ValueError, match="same number"):
        ratio(Timing([1.0]), Timing([1.0, 2.0]))


def test_measure_plan_in_rounds_reports_medians_and_each_rounds_speedup():
    from sphgpu.convolve import RadialKernel, measure_plan, plan_for_cuts

    k = RadialKernel.gaussian(1500.0, 16)
    plan = plan_for_cuts(k, nside=8, l_cut=6, theta_cut=0.5, cost_model="paper")
    steps = []
    me = measure_plan(plan, backend="cpu", repeat=3, warmup=1,
                      progress=lambda f, text: steps.append(text)).measured
    t = me.timings
    assert set(t) == {"all harmonic", "plan", "harmonic part", "real-space part"}
    assert all(len(x.seconds) == 3 for x in t.values())
    assert me.time_total == t["plan"].median and me.time_all_harmonic == \
        t["all harmonic"].median
    assert me.speedup == me.speedup_ratio.median and me.speedup_ratio.n == 3
    assert "warm-up 1 of 1: all harmonic" in steps and "round 3 of 3: real-space part" in steps
    one = measure_plan(plan, backend="cpu").measured       # the default: one round, as before
    assert one.speedup_ratio.n == 1
    assert one.speedup == pytest.approx(one.time_all_harmonic / one.time_total)
    with pytest.raises(ValueError, match="repeat"):
        measure_plan(plan, backend="cpu", repeat=0)
