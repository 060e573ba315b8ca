"""The XGBoost cost model's training time by thread count and training-set size.

Feature rows of real schedules (a workload's design spaces sampled at random, MetaSchedule's
``PerStoreFeature``), costs drawn log-normal, one stock ``XGBModel`` trained on 1 and on 2
threads for each size; prints the seconds, the boosting rounds and whether the two boosters
predict the same. ``msviz.engine.measure.callbacks.ONE_THREAD_BELOW`` is set from it. Run it on
idle cores, and again with the cores busy (another tuning) to see what the barriers cost::

    .venv/bin/python benchmarks/cost_model_threads.py [--workload C2D-0] [--sizes 8,32,128,512,2048]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="C2D-0")
    parser.add_argument("--sizes", default="8,32,128,512,2048")
    args = parser.parse_args()
    try:
        sizes = [int(v) for v in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes takes comma-separated sample counts, got {args.sizes!r}")
    if not sizes or min(sizes) < 2 or max(sizes) > 100_000:
        parser.error(f"--sizes must each be within 2..100000 samples, got {args.sizes!r}")
    from msviz import compat, workloads

    ms = compat.ms
    mod = workloads.get(args.workload).mod
    context = ms.TuneContext(mod=mod, target=compat.make_target("llvm"),
                             space_generator="post-order-apply", task_name=args.workload)
    spaces = context.space_generator.generate_design_space(mod)
    extractor = ms.feature_extractor.PerStoreFeature()
    arg_info = ms.arg_info.ArgInfo.from_entry_func(mod)
    feats = []
    for i in range(300):
        sch = compat.Schedule(mod, seed=i + 1)
        try:
            compat.Trace(spaces[i % len(spaces)].trace.insts, {}).apply_to_schedule(
                sch, remove_postproc=False)
        except Exception:  # TVM's errors: a sample its postprocs would reject
            continue
        cand = ms.search_strategy.MeasureCandidate(sch, arg_info)
        feats.append(extractor.extract_from(context, [cand])[0].numpy())
    print(f"{platform.processor() or platform.machine()}; {args.workload}: {len(feats)} "
          f"schedules, {feats[0].shape[0]} feature rows each")
    rng = np.random.default_rng(0)
    for n in sizes:
        xs = [feats[i % len(feats)] * (1 + 0.01 * rng.standard_normal(feats[0].shape[1]))
              for i in range(n)]
        costs = rng.lognormal(0.0, 0.5, n)
        ys = costs.min() / costs
        cells, preds = [], []
        for threads in (1, 2):
            model = ms.cost_model.XGBModel(num_tuning_cores=threads)
            began = time.perf_counter()
            model._train(xs, ys)  # what update() does after extracting the features
            seconds = time.perf_counter() - began
            cells.append(f"{threads} thread{'s' * (threads > 1)} {seconds:.2f} s "
                         f"({model.booster.num_boosted_rounds()} rounds)")
            preds.append(compat.xgb_predict(model, xs[:64]))
        same = np.array_equal(preds[0], preds[1])
        print(f"  {n:>5} samples: {'; '.join(cells)}; same predictions: {same}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
