"""Shape families and their cover, with real TVM: a GMM family over ``M`` tuned at a few
shapes (tiny searches), every tuned schedule carried to every shape and measured, the dispatch
work dir compiled with stock ``compile_tir`` for each shape and checked against numpy."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import msviz
from msviz.errors import MsvizError, WorkloadError
from msviz.records.shape_cover import dispatch_ranges, weighted_geomean
from msviz.records.task_match import distance, extents, form, nearest
from msviz.workflows.shapes import ShapeTuning, default_max_k

TINY = dict(population_size=16, init_min_unmeasured=8, genetic_num_iters=1,
            cost_model_task_warmup=0,
            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
SIZES = [16, 64, 256]


# -- families -----------------------------------------------------------------------------------


def test_workload_family_varies_the_named_size() -> None:
    fam = msviz.shapes("GMM", dim="M", sizes=[256, 1, 16], weights=[1, 2, 1])
    assert [s.label for s in fam.shapes] == ["M=1", "M=16", "M=256"]
    assert [s.params for s in fam.shapes] == [(1, 128, 1, 128), (1, 128, 16, 128),
                                              (1, 128, 256, 128)]
    assert [s.weight for s in fam.shapes] == [0.5, 0.25, 0.25]
    w = fam.program("M=16")
    assert w.name == "GMM(1, 128, 16, 128)"
    assert extents(w.mod) == (1, 128, 16, 128)
    assert fam.to_dict()["dim"] == "M" and len(fam) == 3


def test_conv_family_varies_two_sizes_together() -> None:
    fam = msviz.shapes("C2D-1", dim=("H", "W"), sizes=[7, 14])
    assert [s.params for s in fam.shapes] == [(1, 7, 7, 64, 64, 1, 1, 0),
                                              (1, 14, 14, 64, 64, 1, 1, 0)]
    assert fam.dim == "H,W" and fam.shapes[0].weight == 0.5


def test_model_family_builds_each_input_size() -> None:
    fam = msviz.shapes("convnet", sizes=[24, (1, 3, 40, 40)])
    assert [s.label for s in fam.shapes] == ["1x3x24x24", "1x3x40x40"]
    assert fam.kind == "model" and fam.program("1x3x24x24").inputs[0][1] == (1, 3, 24, 24)


@pytest.mark.parametrize("kwargs, message", [
    (dict(dim="Q", sizes=[1, 2]), "dim must name the sizes of GMM that vary, one or more "
                                  "of B, N, M, K; got 'Q'"),
    (dict(dim="M", sizes=[]), "sizes must be a non-empty list"),
    (dict(dim="M", sizes=[0, 4]), "each size must be an int >= 1"),
    (dict(dim="M", sizes=[4, 4]), "sizes repeat a size"),
    (dict(dim="M", sizes=[1, 4], weights=[1]), "weights has 1 values for 2 sizes"),
    (dict(dim="M", sizes=[1, 4], weights=[1, -1]), "weights must be finite, >= 0"),
    (dict(dim="M", sizes="1,4"), "sizes must be a non-empty list"),
])
def test_bad_families_say_what_was_wrong(kwargs: dict, message: str) -> None:
    with pytest.raises(WorkloadError) as err:
        msviz.shapes("GMM", **kwargs)
    assert message in str(err.value)


def test_unknown_program_is_refused() -> None:
    with pytest.raises(WorkloadError, match="unknown workload 'NOPE'"):
        msviz.shapes("NOPE", dim="M", sizes=[1])
    with pytest.raises(WorkloadError, match="not int"):
        msviz.shapes(3, sizes=[1])


# -- which task is which ------------------------------------------------------------------------


def test_tasks_match_by_form_and_nearest_extents() -> None:
    from msviz.engine.arguments import tasks_of

    _, small = tasks_of(msviz.models.build("transformer-block", input_shape=(16, 32)), "llvm")
    _, large = tasks_of(msviz.models.build("transformer-block", input_shape=(64, 32)), "llvm")
    cands = [(t.name, t.workload.mod) for t in small]
    for task in large:
        name = nearest(task.workload.mod, cands)
        assert name is not None, task.name
        src = next(t for t in small if t.name == name)
        assert form(src.workload.mod) == form(task.workload.mod)
        # no task of that form is nearer (by an independent scan)
        want = extents(task.workload.mod)
        ds = [distance(want, extents(t.workload.mod)) for t in small
              if form(t.workload.mod) == form(task.workload.mod)]
        assert distance(want, extents(src.workload.mod)) == min(ds)
    # the names differ between sizes (Relax numbers them by appearance), the forms match
    assert {t.name for t in small} != {t.name for t in large}


def test_distance_is_log2_sum() -> None:
    assert distance((4, 16), (8, 4)) == 1 + 2
    assert distance((4,), (4, 4)) == math.inf


# -- the cover ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def covered(tmp_path_factory: pytest.TempPathFactory) -> tuple[ShapeTuning, Path]:
    root = tmp_path_factory.mktemp("shapes") / "gmm"
    fam = msviz.shapes("GMM", dim="M", sizes=SIZES)
    tuning = msviz.tune_shapes(fam, work_dir=root, trials=8, trials_per_batch=8, k=2, seed=1,
                               **TINY)
    events: list[dict] = []
    tuning.subscribe(events.append)
    cover = tuning.run()
    assert cover.state == "finished" and tuning.state == "finished"
    assert [e["kind"] for e in events][-1] == "finished"
    return tuning, root


def test_first_pick_is_the_weighted_middle(covered: tuple) -> None:
    tuning, _ = covered
    # log2 sizes 4, 6, 8 with equal weights: 6 (M=64) is nearest to all
    assert tuning.cover.chosen[0] == "M=64"
    assert tuning.cover.tuned[0].why == "the family's weighted middle (by log size)"
    assert len(tuning.cover.chosen) == 2


def _trials(root: Path, label: str) -> object:
    return msviz.open(root / label).trials


def test_cells_are_the_carried_trials_measured_on_each_shape(covered: tuple) -> None:
    tuning, root = covered
    cover = tuning.cover
    for src in cover.chosen:
        for label in cover.labels:
            trials = _trials(root, label)
            cell = cover.cell(src, label)
            if label == src:
                continue
            mine = trials[trials["carried_from"].fillna("").str.startswith(f"{src} trial")]
            ok = mine[mine["status"] == "ok"]
            assert cell is not None and cell.measured == len(ok) >= 1, (src, label)
            assert cell.us == pytest.approx(ok["latency_us"].min())
            assert set(mine["carry"]) == {"shape"} and set(mine["origin"]) == {"library"}


def test_dispatch_is_each_shapes_fastest_and_regret_its_ratio(covered: tuple) -> None:
    tuning, root = covered
    cover = tuning.cover
    for d in cover.dispatch:
        trials = _trials(root, d.shape)
        ok = trials[trials["status"] == "ok"]
        assert d.us == pytest.approx(ok["latency_us"].min())
        own = ok[ok["carry"] != "shape"]
        if d.shape in cover.chosen:
            assert d.own_us == pytest.approx(own["latency_us"].min())
            assert d.regret == pytest.approx(d.us / d.own_us) and d.regret <= 1.0
            assert d.estimated is None
        else:
            assert d.own_us is None and d.regret is None
            assert d.estimated is not None and d.estimated >= 1.0
    w = cover.weighted_regret()
    known = [(cover.weights[d.shape], d.regret) for d in cover.dispatch if d.regret]
    assert w["known"] == pytest.approx(math.exp(sum(a * math.log(b) for a, b in known)
                                                / sum(a for a, _ in known)))


def test_estimated_regret_from_interpolated_throughput(covered: tuple) -> None:
    tuning, _ = covered
    cover = tuning.cover
    untuned = [d for d in cover.dispatch if d.shape not in cover.chosen]
    fam = tuning.family
    points = sorted((math.log2(fam.shape(t).size),
                     math.log(fam.program(t).flop / next(
                         d.own_us for d in cover.dispatch if d.shape == t)))
                    for t in cover.chosen)
    for d in untuned:
        x = math.log2(fam.shape(d.shape).size)
        if x <= points[0][0]:
            y = points[0][1]
        elif x >= points[-1][0]:
            y = points[-1][1]
        else:
            (x0, y0), (x1, y1) = points
            y = y0 + (x - x0) / (x1 - x0) * (y1 - y0)
        expected = max(1.0, d.us / (fam.program(d.shape).flop / math.exp(y)))
        assert d.estimated == pytest.approx(expected)


def test_dispatch_work_dir_compiles_every_shape_with_stock_and_matches_numpy(
        covered: tuple) -> None:
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.tir_integration import compile_tir

    from msviz import compat

    tuning, root = covered
    db = ms.database.JSONDatabase(work_dir=str(root / "dispatch"), allow_missing=False)
    target = compat.make_target("llvm")
    rng = np.random.default_rng(0)
    for shape in tuning.family.shapes:
        mod = tuning.family.program(shape.label).mod
        assert db.has_workload(mod), shape.label
        sch = compile_tir(db, mod, target)
        assert sch is not None
        lib = tvm.tirx.build(sch.mod, target=target)
        x = rng.uniform(-1, 1, (1, 128, 128)).astype("float32")
        y = rng.uniform(-1, 1, (1, 128, shape.size)).astype("float32")
        z = tvm.runtime.tensor(np.zeros((1, 128, shape.size), "float32"), tvm.cpu())
        lib(tvm.runtime.tensor(x), tvm.runtime.tensor(y), z)
        np.testing.assert_allclose(z.numpy(), x @ y, rtol=1e-4, atol=1e-4)


def test_cover_reopens_from_its_root(covered: tuple) -> None:
    tuning, root = covered
    again = msviz.open_shapes(root)
    assert again.to_dict() == tuning.cover.to_dict()
    second = tuning.cover.chosen[1]
    assert (root / "dispatch.txt").read_text() == again.table() + "\n"
    assert again.table().splitlines()[0] == f"GMM over M: tuned M=64, {second} (2 of 3)"
    ranges = dispatch_ranges(again)
    assert ranges[0][0] == "M=16" and ranges[-1][1] == "M=256"
    with pytest.raises(MsvizError, match="holds a shape cover already"):
        ShapeTuning(tuning.family, work_dir=root)


def test_regret_matrix_is_latency_over_the_columns_best(covered: tuple) -> None:
    tuning, _ = covered
    cover = tuning.cover
    m, r = cover.matrix(), cover.regret_matrix()
    for d in cover.dispatch:
        for src in cover.chosen:
            if not math.isnan(m.loc[src, d.shape]):
                assert r.loc[src, d.shape] == pytest.approx(m.loc[src, d.shape] / d.us)
                assert r.loc[src, d.shape] >= 1.0 - 1e-9


# -- settings and stopping ----------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    (dict(k=0), "k must be an int in 1..3"),
    (dict(k=4), "k must be an int in 1..3"),
    (dict(regret=0.9), "regret must be a number >= 1"),
    (dict(trials=0), "trials must be an int >= 1"),
    (dict(max_k=9), "max_k must be an int in 1..3"),
    (dict(carry_top=0), "carry_top must be an int >= 1"),
])
def test_bad_settings_say_what_was_wrong(tmp_path: Path, kwargs: dict, message: str) -> None:
    fam = msviz.shapes("GMM", dim="M", sizes=SIZES)
    with pytest.raises(ValueError, match=message):
        msviz.tune_shapes(fam, work_dir=tmp_path / "x", **kwargs)
    with pytest.raises(TypeError, match="family must be a ShapeFamily"):
        msviz.tune_shapes("GMM", work_dir=tmp_path / "y")


def test_session_settings_are_checked_before_the_thread(tmp_path: Path) -> None:
    fam = msviz.shapes("GMM", dim="M", sizes=SIZES)
    with pytest.raises(ValueError, match="max_trials, resume cannot be given to a shape cover"):
        msviz.tune_shapes(fam, work_dir=tmp_path / "x", max_trials=8, resume=True)
    with pytest.raises(TypeError, match="no_such_knob"):
        msviz.tune_shapes(fam, work_dir=tmp_path / "x", no_such_knob=3)
    with pytest.raises(ValueError, match="repeat"):
        msviz.tune_shapes(fam, work_dir=tmp_path / "x", evaluator_config={"repeat": 0})
    assert not (tmp_path / "x").exists()


def test_default_max_k() -> None:
    assert [default_max_k(n) for n in (1, 2, 4, 6, 8, 16)] == [1, 1, 1, 2, 3, 6]


def test_stop_keeps_what_was_measured(tmp_path: Path) -> None:
    fam = msviz.shapes("GMM", dim="M", sizes=[16, 64])
    tuning = msviz.tune_shapes(fam, work_dir=tmp_path / "s", trials=64, trials_per_batch=8,
                               k=2, seed=1, **TINY)
    tuning.subscribe(lambda e: tuning.stop() if e["kind"] == "picked" else None)
    tuning.start()
    assert tuning.wait(600) == "stopped"
    cover = msviz.open_shapes(tmp_path / "s")
    assert cover.state == "stopped" and len(cover.chosen) == 1
    trials = msviz.open(tmp_path / "s" / cover.chosen[0]).trials
    assert cover.tuned[0].trials == len(trials) < 64


def test_weighted_geomean() -> None:
    assert weighted_geomean([(1, 2.0), (3, 1.0)]) == pytest.approx(2 ** 0.25)
    assert weighted_geomean([]) is None


def test_cli_says_what_was_wrong(capsys: pytest.CaptureFixture) -> None:
    from msviz.cli import main

    assert main(["shapes", "GMM", "--sizes", "16,64"]) == 2
    assert "dim must name the sizes of GMM that vary" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["shapes", "GMM", "--dim", "M", "--sizes", "16,x"])
    assert "sizes are ints or input shapes like 1x3x32x32" in capsys.readouterr().err
