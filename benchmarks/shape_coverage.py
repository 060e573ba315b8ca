"""One tuning, many shapes: a cover of a few tuned shapes against tuning every shape.

For each family (a GMM family over ``M``, a conv family over the image size, a catalogue model
at several input sizes), on this host's CPU:

* ``all``: every shape tuned on its own (a default msviz :class:`~msviz.engine.session.Session`
  of ``--trials`` trials per shape, cold, one after another): the summed wall;
* ``cover``: :func:`msviz.tune_shapes` with the same trials per tuned shape (``k`` chosen by
  the regret target unless ``--k``): its wall (tuning, cross-measurement, dispatch);
* then, per shape, the kernel ``all`` tuned for it and the kernel the cover dispatches to it,
  each compiled with stock ``compile_tir`` from its work dir (the cover's one dispatch dir for
  every shape), checked against numpy and timed in one process in alternating rounds
  (``time_evaluator``, median of the rounds); for the model, ``compile_relax`` of each size
  from each work dir, compared whole in paired rounds (:func:`msviz.compare_models`), and every
  task of every size looked up in the dispatch dir (no "cannot find workload" fallback).

It prints the CPU, the regret matrix, each shape's ratio (cover / all; < 1: the cover's kernel
is faster), the weighted geometric mean of the ratios, and the walls. Targets (issue 39): with
``k <= 3`` the weighted geometric-mean ratio <= 1.10 in <= 0.4x the wall of tuning every shape.

    python benchmarks/shape_coverage.py --root /tmp/shapes-bench            # all three
    python benchmarks/shape_coverage.py --families gmm --trials 64 --root /tmp/sb
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

FAMILIES = {
    # name: (program, dim, sizes, weights)
    "gmm": ("GMM-0", "M", [1, 4, 16, 32, 64, 128, 256, 512], [4, 4, 3, 3, 2, 2, 1, 1]),
    "conv": ("C2D", ("H", "W"), [7, 14, 21, 28, 42, 56], [3, 3, 2, 2, 1, 1]),
    "model": ("convnet", None, [24, 32, 48, 64], [2, 2, 1, 1]),
}
CONV_BASE = (1, 56, 56, 32, 32, 3, 1, 1)  # C2D sizes (N, H, W, CI, CO, k, stride, pad)


def cpu_name() -> str:
    from msviz.records.environment import host_facts

    host = host_facts()["host"]
    return f"{host['cpu']} ({host['mcpu']})"


def family(name: str) -> Any:
    import msviz

    program, dim, sizes, weights = FAMILIES[name]
    if name == "conv":
        from msviz.models.shape_family import Shape, ShapeFamily
        from msviz.workloads import get

        total = sum(weights)
        members = []
        for s, w in zip(sizes, weights):
            p = list(CONV_BASE)
            p[1] = p[2] = s
            members.append(Shape(f"H,W={s}", s, w / total, tuple(p)))
        return ShapeFamily("C2D", "workload", "H,W", members,
                           lambda sh: get("C2D", shape=sh.params))
    return msviz.shapes(program, sizes=sizes, weights=weights, dim=dim)


def tune_all(fam: Any, root: Path, trials: int, seed: int, reuse: bool) -> dict[str, float]:
    """Each shape tuned on its own; seconds per shape."""
    import msviz

    seconds = {}
    stamp = root / "all-seconds.json"
    if reuse and stamp.is_file():
        return json.loads(stamp.read_text())
    for shape in fam.shapes:
        work_dir = root / "all" / shape.label
        t0 = time.perf_counter()
        s = msviz.Session(fam.program(shape.label), work_dir=work_dir, max_trials=trials,
                          seed=seed, end_to_end_check=False)
        s.start()
        s.wait()
        seconds[shape.label] = time.perf_counter() - t0
        print(f"  all: {shape.label}: {seconds[shape.label]:.1f} s, best "
              f"{s.best_secs * 1e6:.2f} us", flush=True)
    stamp.write_text(json.dumps(seconds))
    return seconds


def numpy_reference(fam: Any, shape: Any, args: list[np.ndarray]) -> np.ndarray:
    if fam.name == "GMM":
        return np.einsum("bnk,bkm->bnm", args[0], args[1])
    x, w = args[0], args[1]  # C2D NHWC, weight (kh, kw, ci, co), stride 1
    p = shape.params
    k, pad = p[5], p[7]
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = xp.shape[1] - k + 1, xp.shape[2] - k + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), dtype=np.float64)
    for i in range(k):
        for j in range(k):
            out += np.einsum("nhwc,co->nhwo", xp[:, i:i + oh, j:j + ow, :], w[i, j])
    return out.astype(np.float32)


def kernel(db_dir: Path, mod: Any, target: Any) -> Any:
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.tir_integration import compile_tir

    # stock's own database: what a user compiles from
    db = ms.database.JSONDatabase(work_dir=str(db_dir), allow_missing=False)
    sch = compile_tir(db, mod, target)
    if sch is None:
        raise RuntimeError(f"{db_dir}: no record for {mod}")
    return tvm.tirx.build(sch.mod, target=target)


def time_kernels(fam: Any, all_root: Path, dispatch: Path, rounds: int) -> list[dict]:
    import tvm

    from msviz import compat

    target = compat.make_target("llvm")
    dev = tvm.cpu(0)
    rng = np.random.default_rng(0)
    out = []
    for shape in fam.shapes:
        w = fam.program(shape.label)
        libs = {"all": kernel(all_root / shape.label, w.mod, target),
                "cover": kernel(dispatch, w.mod, target)}
        shapes = [[int(d) for d in a.shape]
                  for a in compat.ArgInfo.from_prim_func(w.mod["main"])]
        host = [rng.uniform(-1, 1, s).astype("float32") for s in shapes]
        expected = numpy_reference(fam, shape, host)
        times: dict[str, list[float]] = {"all": [], "cover": []}
        for name, lib in libs.items():
            args = [tvm.runtime.tensor(a, dev) for a in host[:-1]] + [
                tvm.runtime.tensor(np.zeros_like(host[-1]), dev)]
            lib(*args)
            np.testing.assert_allclose(args[-1].numpy(), expected, rtol=1e-3, atol=1e-3)
        for _ in range(rounds):  # alternating rounds, one process
            for name, lib in libs.items():
                args = [tvm.runtime.tensor(a, dev) for a in host]
                ev = lib.time_evaluator(lib.entry_name, dev, number=20, repeat=3,
                                        min_repeat_ms=50)
                times[name].append(min(ev(*args).results) * 1e6)
        blas = None
        if fam.name == "GMM":
            a, b = host[0][0], host[1][0]  # B = 1: a 2-D matmul, numpy's BLAS
            t0 = time.perf_counter()
            n = 0
            while time.perf_counter() - t0 < 0.2:
                np.matmul(a, b)
                n += 1
            blas = (time.perf_counter() - t0) / n * 1e6
        med = {k: float(np.median(v)) for k, v in times.items()}
        out.append({"shape": shape.label, "weight": shape.weight, "all_us": med["all"],
                    "cover_us": med["cover"], "ratio": med["cover"] / med["all"],
                    "spread": [min(c / a for c, a in zip(times["cover"], times["all"])),
                               max(c / a for c, a in zip(times["cover"], times["all"]))],
                    "numpy_us": blas, "checked": "numpy"})
    return out


def compare_model(fam: Any, all_root: Path, dispatch: Path, rounds: int) -> list[dict]:
    from tvm.s_tir import meta_schedule as ms

    import msviz
    from msviz.engine.arguments import tasks_of

    db = ms.database.JSONDatabase(work_dir=str(dispatch), allow_missing=False)
    out = []
    for shape in fam.shapes:
        model = fam.program(shape.label)
        _, tasks = tasks_of(model, "llvm")
        found = sum(bool(db.has_workload(t.workload.mod)) for t in tasks)
        cmp = msviz.compare_models(all_root / shape.label, dispatch, model=model,
                                   names=("all", "cover"), rounds=rounds)
        out.append({"shape": shape.label, "weight": shape.weight, "tasks": len(tasks),
                    "found_in_dispatch": found, "comparison": str(cmp),
                    "ratio": float(cmp.median), "spread": [float(cmp.low), float(cmp.high)]})
    return out


def weighted_geomean(rows: list[dict]) -> float:
    total = sum(r["weight"] for r in rows)
    return math.exp(sum(r["weight"] * math.log(r["ratio"]) for r in rows) / total)


def run_family(name: str, args: argparse.Namespace) -> dict:
    import msviz

    fam = family(name)
    root = Path(args.root) / name
    trials = args.model_trials if fam.kind == "model" else args.trials
    print(f"\n== {name}: {fam} ({trials} trials per tuned shape)", flush=True)
    all_secs = tune_all(fam, root, trials, args.seed, args.reuse)
    cover_root = root / "cover"
    if args.reuse and (cover_root / "shapes.json").is_file():
        cover = msviz.open_shapes(cover_root)
    else:
        if cover_root.exists():
            import shutil

            shutil.rmtree(cover_root)
        options = {"k": args.k} if args.k else {}
        tuning = msviz.tune_shapes(fam, work_dir=cover_root, trials=trials, seed=args.seed,
                                   regret=args.regret, **options)
        tuning.subscribe(lambda e: print(f"  cover: {e}", flush=True)
                         if e["kind"] in ("picked", "tuned", "done") else None)
        cover = tuning.run()
    print(cover.table())
    print("regret matrix (latency / best known for the column):")
    print(cover.regret_matrix().round(3).to_string())
    dispatch = cover_root / (cover.work_dir or "dispatch")
    if fam.kind == "model":
        rows = compare_model(fam, root / "all", dispatch, args.rounds)
    else:
        rows = time_kernels(fam, root / "all", dispatch, args.rounds)
    all_wall = sum(all_secs.values())
    result = {"family": name, "trials": trials, "k": len(cover.chosen), "tuned": cover.chosen,
              "all_s": all_wall, "cover_s": cover.seconds, "cross_s": cover.cross_seconds,
              "time_ratio": cover.seconds / all_wall, "rows": rows,
              "weighted_ratio": weighted_geomean(rows),
              "cover_regret": cover.weighted_regret()}
    print(f"{'shape':<14}{'weight':>7}{'all us':>11}{'cover us':>11}{'ratio':>8}  spread"
          + ("   numpy us" if fam.name == "GMM" else ""))
    for r in rows:
        extra = f"   {r['numpy_us']:.2f}" if r.get("numpy_us") else ""
        if fam.kind == "model":
            extra = f"   tasks found {r['found_in_dispatch']}/{r['tasks']}"
        print(f"{r['shape']:<14}{r['weight']:>7.3f}{r.get('all_us', math.nan):>11.2f}"
              f"{r.get('cover_us', math.nan):>11.2f}{r['ratio']:>8.3f}  "
              f"{r['spread'][0]:.3f}-{r['spread'][1]:.3f}{extra}")
    print(f"weighted geomean ratio cover/all: {result['weighted_ratio']:.3f} (target <= 1.10); "
          f"tuned {result['k']} of {len(fam)} (target <= 3)")
    print(f"wall: all {all_wall:.1f} s, cover {cover.seconds:.1f} s (cross-measurement "
          f"{cover.cross_seconds:.1f} s): {result['time_ratio']:.3f}x (target <= 0.4x)")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--families", default="gmm,conv,model")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--model-trials", type=int, default=128)
    parser.add_argument("--k", type=int, default=None)
    parser.add_argument("--regret", type=float, default=1.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="reuse finished runs under --root")
    args = parser.parse_args(argv)
    import os

    import msviz  # sets TVM_NUM_THREADS to the physical cores unless set

    del msviz
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores, TVM_NUM_THREADS="
          f"{os.environ.get('TVM_NUM_THREADS')}; the comparison kernel for GMM: numpy.matmul "
          f"(its BLAS: {np.__version__})")
    results = [run_family(name.strip(), args) for name in args.families.split(",")]
    Path(args.root, "results.json").write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
