"""Differential harness: stock MetaSchedule and msviz replay the same sampled decisions.

For one (target, workload) case, stock MetaSchedule makes the design space (``PostOrderApply()``
with nothing set, so the rules and postprocs come from the whole target), and each sketch is
sampled as its search does: the sketch's instructions without decisions replayed on a fresh
schedule with a new seed. Each sampled trace is then materialised twice:

- stock: a fresh schedule of the workload, the trace without its postproc part,
  ``EnterPostproc``, each postproc of the TuneContext in order (``ThreadedTraceApply``);
- msviz: ``msviz.trace.with_decisions(trace, {}, mod=..., target=...)``.

The two must give the same IRModule (``structural_equal`` and the printed TVMScript), the same
full trace (postproc instructions included) and the same generated source (x86 assembly for
llvm targets, CUDA C for cuda targets). The same is done with one decision edited, picked from
``msviz.trace.decision_sites``: stock applies it with ``Trace.with_decision``. A stock postproc
that rejects a schedule makes the sample uncomparable (stock could not measure it either); msviz
must then reject it too, naming the same postproc (or, for an edit, fail to replay too).

Two more comparisons per case: msviz's own editable rule set (``RuleSet.default(target)``, what
a Session searches) must make stock's design space (the same instructions; msviz's
``keep_untensorized`` only adds sketches) and its postprocs must postprocess each sample as
stock's do; and every compared schedule, stored as a stock ``TuningRecord`` of its target in a
``JSONDatabase`` work dir, must come back from ``msviz.open(work_dir)`` and
``with_decisions(trial, {})`` as stock's ``TuningRecord.as_measure_candidate()`` makes it.

Run one case by hand (prints every comparison)::

    python -m tests.differential.harness vnni I8DP
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Targets, as dicts (a CUDA target also gets an llvm host). The llvm ones pin ``mcpu`` so the
#: rule kind (generic, AVX-512, VNNI) does not depend on the machine the tier runs on.
CPU_TARGETS: dict[str, dict] = {
    "llvm": {"kind": "llvm", "num-cores": 2},
    "avx2": {"kind": "llvm", "num-cores": 2, "mcpu": "haswell"},
    "avx512": {"kind": "llvm", "num-cores": 2, "mcpu": "skylake-avx512"},
    "vnni": {"kind": "llvm", "num-cores": 2, "mcpu": "cascadelake"},
}
CUDA_ARCHS = ("sm_70", "sm_80", "sm_90")
HOST = CPU_TARGETS["llvm"]


def cuda_spec(arch: str) -> dict:
    """A CUDA target dict with the hardware attributes MetaSchedule's rules need."""
    return {"kind": "cuda", "arch": arch, "max_threads_per_block": 1024,
            "max_shared_memory_per_block": 49152, "thread_warp_size": 32,
            "registers_per_block": 65536}


TARGETS: dict[str, dict] = {**CPU_TARGETS, **{arch: cuda_spec(arch) for arch in CUDA_ARCHS}}

#: The rule kind stock derives from each target (``GetRuleKindFromTarget``).
RULE_KINDS = {"llvm": "llvm", "avx2": "llvm", "avx512": "avx512", "vnni": "vnni",
              "sm_70": "cuda", "sm_80": "cuda-tensorcore", "sm_90": "cuda-tensorcore"}

#: Workloads: catalogue name and sizes (``msviz.workloads.get(name, shape=sizes)``), all small.
WORKLOADS: dict[str, tuple[str, tuple]] = {
    "GMM": ("GMM", (1, 32, 32, 32)),  # fp32 batch matmul
    "C2D": ("C2D", (1, 8, 8, 16, 16, 3, 1, 1)),  # fp32 conv2d NHWC 3x3, padded
    "NRM": ("NRM", (1, 32, 32)),  # fp32 reduction (norm over M, N)
    # fp32 softmax: four blocks (rfactor / cross-thread reduction, compute-location decisions)
    "SFM": ("SFM", (32, 32)),
    "I8DP": ("I8DP", (32, 64, 64)),  # u8 x i8 -> i32 dense, B packed [N/16, K/4, 16, 4]
    # fp16 matmul for tensor cores. fp16 accumulation: with fp32 accumulation most tensor-core
    # samples fail stock's own build (LowerIntrin: "tvm_access_ptr element type must match").
    "F16": ("GMM", (1, 64, 64, 64, "float16", "float16")),
}

#: (target, workload) pairs of the tier: the fp32 spread everywhere, the softmax on one CPU and
#: one GPU (its 9 CPU sketches cost as much as a conv), the tensorizable int8 dense on the x86
#: targets that tensorize it (AVX-512: dot_16x4_avx512, VNNI: dot_16x4_vnni), the fp16 matmul
#: on every CUDA arch (tensor cores from sm_75).
CASES: list[tuple[str, str]] = (
    [(t, w) for t in CPU_TARGETS for w in ("GMM", "C2D", "NRM")]
    + [("llvm", "SFM"), ("avx512", "I8DP"), ("vnni", "I8DP")]
    + [(t, w) for t in CUDA_ARCHS for w in ("GMM", "C2D", "NRM", "F16")]
    + [("sm_70", "SFM")]
)

#: Cases whose design space must tensorize (else the case would test nothing special).
TENSORIZED = {("avx512", "I8DP"), ("vnni", "I8DP"), ("sm_80", "F16"), ("sm_90", "F16")}

#: Per sketch: compare up to this many samples that pass stock's postprocs, trying at most
#: ``MAX_SEEDS`` seeds on a CPU and ``MAX_SEEDS_CUDA`` on CUDA, where VerifyGPUCode rejects
#: most samples (too many threads or too much shared memory).
SAMPLES_PER_SKETCH = 2
MAX_SEEDS = 6
MAX_SEEDS_CUDA = 16

#: Tallies of the tests that ran, per target (printed at the end of a pytest run).
RESULTS: dict[str, Any] = {}


_CUDA_UNAVAILABLE: list[str | None] = []


def cuda_unavailable() -> str | None:
    """Why TVM cannot generate CUDA source here (None when it can; no GPU is needed)."""
    if not _CUDA_UNAVAILABLE:
        try:
            import tvm
            from tvm import te

            from msviz import compat

            a = te.placeholder((64,), name="A")
            b = te.compute((64,), lambda i: a[i] + 1.0, name="B")
            sch = compat.Schedule(te.create_prim_func([a, b]))
            sch.bind(sch.get_loops(sch.get_sblock("B"))[0], "threadIdx.x")
            rt = tvm.tirx.build(sch.mod, target=make_target(CUDA_ARCHS[0]))
            kernels = [m for m in rt.imports if m.kind == "cuda"]
            ok = kernels and "__global__" in kernels[0].inspect_source()
            _CUDA_UNAVAILABLE.append(None if ok else "tvm.tirx.build made no CUDA kernel source")
        except Exception as err:
            _CUDA_UNAVAILABLE.append(f"TVM cannot generate CUDA source here: {last_line(err)}")
    return _CUDA_UNAVAILABLE[0]


def make_target(name: str) -> Any:
    import tvm

    spec = TARGETS[name]
    if spec["kind"] == "cuda":
        return tvm.target.Target(spec, host=tvm.target.Target(HOST))
    return tvm.target.Target(spec)


def make_mod(workload: str) -> Any:
    from msviz import workloads

    name, sizes = WORKLOADS[workload]
    return workloads.get(name, shape=sizes).mod


def setup() -> None:
    """Both sides use msviz's LLVM-22-compatible ``dot_16x4_vnni`` (registered before any
    TuneContext exists), so they compare like for like."""
    from msviz import compat

    compat.register_tensor_intrins()


# -- stock side ------------------------------------------------------------------------------


def stock_space(mod: Any, target: Any, seed: int = 1) -> tuple[Any, list]:
    """(TuneContext, sketches) of stock MetaSchedule with everything chosen from the target."""
    from msviz import compat

    ms = compat.ms
    space = ms.space_generator.PostOrderApply()
    ctx = ms.TuneContext(mod=mod, target=target, space_generator=space, num_threads=1,
                         rand_state=seed)
    return ctx, list(ctx.generate_design_space())


def fresh(mod: Any, seed: int) -> Any:
    """A schedule as ``ThreadedTraceApply`` makes it (no debug checks, no error rendering)."""
    from msviz import compat

    return compat.Schedule(mod, seed=seed, debug_mask=0, error_render_level="none")


def sample(mod: Any, sketch: Any, seed: int) -> Any:
    """The sketch's instructions with fresh decisions (as the search's initial population)."""
    from msviz import compat

    sch = fresh(mod, seed)
    compat.Trace(sketch.trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
    return sch.trace


#: The step that rejects a schedule whose trace does not replay (msviz: a DecisionError that
#: names no postproc).
REPLAY_FAILED = "trace replay"


@dataclass
class StockResult:
    schedule: Any = None
    rejected_by: str | None = None  # the postproc that returned False or raised
    error: str = ""


def stock_replay(mod: Any, trace: Any, postprocs: list, seed: int = 1) -> StockResult:
    """Stock materialisation of ``trace``: replay without postprocs, then each postproc."""
    sch = fresh(mod, seed)
    try:
        trace.apply_to_schedule(sch, remove_postproc=True)
    except Exception as err:  # an edit that makes a later instruction fail
        return StockResult(None, REPLAY_FAILED, last_line(err))
    sch.enter_postproc()
    for postproc in postprocs:
        try:
            ok = postproc.apply(sch)
        except Exception as err:  # a raising postproc rejects the candidate in stock too
            return StockResult(None, type(postproc).__name__, last_line(err))
        if not ok:
            return StockResult(None, type(postproc).__name__)
    return StockResult(sch)


def last_line(err: BaseException) -> str:
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


def source_of(mod: Any, target: Any) -> str:
    """Stock's generated source: CUDA C of the device module, or x86 assembly.

    LLVM IR (``"ll"``) is not compared: its TBAA metadata names buffers by their addresses
    (``!"0x5647f4928bf0.w64.b0"``), which differ from build to build of the same module.
    """
    import tvm

    rt = tvm.tirx.build(mod, target=target)
    if target.kind.name == "cuda":
        return next(m for m in rt.imports if m.kind == "cuda").inspect_source()
    return rt.inspect_source("asm")


def msviz_source(replay: Any, target: Any) -> str:
    from msviz.trace import generated_source

    return generated_source(replay, target, None if target.kind.name == "cuda" else "asm")


def built(fn: Any, *args: Any) -> tuple[str | None, str]:
    """(source, "") or (None, the error's last line)."""
    try:
        return fn(*args), ""
    except Exception as err:
        return None, last_line(err)


# -- one comparison --------------------------------------------------------------------------


@dataclass
class Disagreement:
    case: str  # "target/workload sketch S seed K [edit I=V]"
    what: str  # which comparison failed
    detail: str
    repro: str = ""

    def __str__(self) -> str:
        return f"{self.case}: {self.what}: {self.detail}\n{self.repro}"


@dataclass
class Tally:
    """Counts of one target."""

    sketches: int = 0
    samples: int = 0  # seeds tried
    stock_rejected: int = 0
    compared: int = 0
    edits: int = 0  # edits tried
    edits_rejected: int = 0
    edits_compared: int = 0
    build_failed_both: int = 0
    tensorized: int = 0  # compared schedules (edited or not) that use a tensor intrinsic
    rule_set: int = 0  # samples postprocessed with msviz's RuleSet postprocs as well
    stored: int = 0  # stored trials replayed by with_decisions(trial, {})
    disagreements: list = field(default_factory=list)
    #: Full traces of the schedules stock accepted (what a tuner would store).
    stock_traces: list = field(default_factory=list, repr=False)

    def add(self, other: Tally) -> None:
        for name in ("sketches", "samples", "stock_rejected", "compared", "edits",
                     "edits_rejected", "edits_compared", "build_failed_both", "tensorized",
                     "rule_set", "stored"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.disagreements.extend(other.disagreements)


def first_difference(a: str, b: str, context: int = 2) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            lo = max(0, i - context)
            return (f"line {i + 1}:\n  stock: " + "\n  stock: ".join(la[lo:i + 1])
                    + "\n  msviz: " + "\n  msviz: ".join(lb[lo:i + 1]))
    return f"same first {min(len(la), len(lb))} lines; stock {len(la)} lines, msviz {len(lb)}"


def repro_snippet(target_name: str, workload: str, trace: Any, edit: tuple | None) -> str:
    """A stand-alone script that shows the disagreement."""
    from msviz import compat

    name, sizes = WORKLOADS[workload]
    trace_json = json.dumps(compat.to_jsonable(trace.as_json()))
    spec = TARGETS[target_name]
    host = f", host=tvm.target.Target({HOST!r})" if spec["kind"] == "cuda" else ""
    edit_py = "{}" if edit is None else f"{{{edit[0]}: {edit[1]!r}}}"
    stock_trace = ("trace" if edit is None else
                   f"trace.with_decision(trace.insts[{edit[0]}], {edit[1]!r}, "
                   "remove_postproc=True)")
    return f"""\
import json, tvm, msviz
from msviz import compat, workloads
compat.register_tensor_intrins()
mod = workloads.get({name!r}, shape={sizes!r}).mod
target = tvm.target.Target({spec!r}{host})
space = compat.ms.space_generator.PostOrderApply()
ctx = compat.ms.TuneContext(mod=mod, target=target, space_generator=space, num_threads=1)
s = compat.Schedule(mod); compat.Trace.apply_json_to_schedule(json.loads({trace_json!r}), s)
trace = s.trace
stock = compat.Schedule(mod, seed=1, debug_mask=0)
{stock_trace}.apply_to_schedule(stock, remove_postproc=True)
stock.enter_postproc()
print([type(p).__name__ for p in space.postprocs], [p.apply(stock) for p in space.postprocs])
ours = msviz.trace.with_decisions(trace, {edit_py}, mod=mod, target=target)
print(ours.postprocs, compat.structural_equal(ours.mod, stock.mod))
"""


def compare_one(mod: Any, target: Any, target_name: str, workload: str, trace: Any,
                postprocs: list, label: str, tally: Tally, *, edit: tuple | None = None,
                rule_set_postprocs: list | None = None, check_sources: bool = True,
                verbose: bool = False) -> None:
    """Materialise ``trace`` (with ``edit`` = (index, value) applied) both ways and compare.

    ``rule_set_postprocs`` (initialised postprocs of msviz's ``RuleSet.default``): stock's
    replay postprocessed with them too must give stock's module."""
    from msviz import compat
    from msviz.errors import DecisionError
    from msviz.trace import with_decisions

    def disagree(what: str, detail: str) -> None:
        tally.disagreements.append(
            Disagreement(label, what, detail, repro_snippet(target_name, workload, trace, edit)))

    stock_trace = trace
    if edit is not None:
        stock_trace = trace.with_decision(trace.insts[edit[0]], edit[1], remove_postproc=True)
    stock = stock_replay(mod, stock_trace, postprocs)
    try:
        ours = with_decisions(trace, {} if edit is None else {edit[0]: edit[1]}, mod=mod,
                              target=target)
        ours_error = None
    except DecisionError as err:
        ours, ours_error = None, err
    if edit is not None:
        tally.edits += 1
    ours_step = None if ours_error is None else (
        getattr(ours_error, "postproc", None) or REPLAY_FAILED)
    if stock.schedule is None:
        if edit is None:
            tally.stock_rejected += 1
        else:
            tally.edits_rejected += 1
        if ours is not None:
            disagree("accepted", f"stock postproc {stock.rejected_by} rejects the schedule "
                     f"{stock.error}, msviz's replay accepts it")
        elif ours_step != stock.rejected_by:
            disagree("rejected by another step", f"stock: {stock.rejected_by}; msviz: "
                     f"{ours_error}")
        if verbose:
            print(f"{label}: rejected by {stock.rejected_by} (msviz: {ours_step or 'accepted'})")
        return
    if ours is None:
        disagree("rejected", f"stock accepts the schedule, msviz raises: {ours_error}")
        return
    if edit is None:
        tally.compared += 1
    else:
        tally.edits_compared += 1
        kept = trace_decision(stock.schedule.trace, edit[0])
        if kept != as_decision(edit[1]):
            disagree("edit not kept by stock", f"msviz lists {edit[1]!r} as a valid choice, "
                     f"stock replays it as {kept!r}")
    tally.stock_traces.append(stock.schedule.trace)
    if any(inst.kind.name == "Tensorize" for inst in stock.schedule.trace.insts):
        tally.tensorized += 1
    if rule_set_postprocs is not None:
        from msviz.trace.replay import apply_trace

        tally.rule_set += 1
        alt = apply_trace(mod, stock_trace, rule_set_postprocs)
        if alt.schedule is None:
            disagree("RuleSet postprocs", f"{alt.failed_step} rejects what stock's accept")
        elif not compat.structural_equal(alt.schedule.mod, stock.schedule.mod):
            disagree("RuleSet postprocs", "module not structurally equal: " + first_difference(
                stock.schedule.mod.script(), alt.schedule.mod.script()))
    stock_names = [type(p).__name__ for p in postprocs]
    if ours.postprocs != stock_names:
        disagree("postprocs", f"stock {stock_names}, msviz {ours.postprocs}")
    if not compat.structural_equal(ours.mod, stock.schedule.mod):
        disagree("module", "not structurally equal: "
                 + first_difference(stock.schedule.mod.script(), ours.mod.script()))
    elif ours.mod.script() != stock.schedule.mod.script():
        disagree("script", first_difference(stock.schedule.mod.script(), ours.mod.script()))
    if str(ours.trace) != str(stock.schedule.trace):
        disagree("trace", first_difference(str(stock.schedule.trace), str(ours.trace)))
    if check_sources:
        want, want_err = built(source_of, stock.schedule.mod, target)
        got, got_err = built(msviz_source, ours, target)
        if want is None and got is None and want_err == got_err:
            tally.build_failed_both += 1
            if verbose:
                print(f"{label}: both builds fail: {want_err}")
        elif want != got or want_err != got_err:
            detail = (first_difference(want, got) if want is not None and got is not None
                      else f"stock: {want_err or 'built'}; msviz: {got_err or 'built'}")
            disagree("generated source", detail)
    if verbose:
        print(f"{label}: compared ({len(tally.disagreements)} disagreements so far)")


def as_decision(value: Any) -> Any:
    from msviz import compat

    value = compat.to_jsonable(value)
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else int(value)


def trace_decision(trace: Any, index: int) -> Any:
    return as_decision(trace.get_decision(trace.insts[index]))


def pick_edit(trace: Any, mod: Any, rng: random.Random) -> tuple | None:
    """One edit msviz lists as valid: a site with other choices and one of them."""
    from msviz.trace import decision_sites

    sites = [s for s in decision_sites(trace, mod=mod) if s.editable and s.count > 1]
    if not sites:
        return None
    site = rng.choice(sites)
    value = rng.choice([c for c in site.choices if c != site.decision])
    return site.index, list(value) if isinstance(value, tuple) else value


# -- msviz's own rule set and stored trials ------------------------------------------------


def shape_of(sketch: Any) -> str:
    """A sketch's instructions, without its (randomly sampled) decisions."""
    from msviz import compat

    return str(compat.Trace(sketch.trace.insts, {}))


def check_rule_set(case: str, mod: Any, target: Any, sketches: list, postprocs: list,
                   mutator_probs: dict) -> tuple[list, list]:
    """msviz's ``RuleSet.default(target)`` against stock's choice for the whole target.

    Returns (the RuleSet's postprocs initialised for ``mod``, disagreements)."""
    from msviz import compat
    from msviz.space_generator import RuleSet
    from msviz.trace.replay import initialised_postprocs

    found = []
    rules = RuleSet.default(target)

    def space(rule_set: Any) -> list[str]:
        ctx = compat.ms.TuneContext(mod=mod, target=target, num_threads=1, rand_state=1,
                                    space_generator=rule_set.space_generator(target))
        return [shape_of(s) for s in ctx.generate_design_space()]

    stock = [shape_of(s) for s in sketches]
    ours = space(rules)
    missing = [i for i, shape in enumerate(stock) if shape not in ours]
    if missing:
        found.append(Disagreement(case, "RuleSet design space", f"stock sketches {missing} of "
                                  f"{len(stock)} are not among msviz's {len(ours)}"))
    keep = [s for s in rules.schedule_rules if "keep_untensorized" in s.params]
    if keep:  # msviz's one addition to stock's rules: without it, stock's space exactly
        exact = rules.copy()
        for spec in keep:
            exact.set(rules.schedule_rules.index(spec), keep_untensorized=False)
        ours = space(exact)
    if not missing and ours != stock:
        found.append(Disagreement(case, "RuleSet design space", f"stock {len(stock)} sketches, "
                                  f"msviz {len(ours)} (other instructions or order)"))
    _, ours_postprocs, ours_mutators = rules.build(target)
    names = ([type(p).__name__ for p in postprocs], [type(p).__name__ for p in ours_postprocs])
    if names[0] != names[1]:
        found.append(Disagreement(case, "RuleSet postprocs", f"stock {names[0]}, msviz "
                                  f"{names[1]}"))
    probs = [{type(m).__name__: round(float(p), 6) for m, p in d.items()}
             for d in (mutator_probs, ours_mutators)]
    if probs[0] != probs[1]:
        found.append(Disagreement(case, "RuleSet mutators", f"stock {probs[0]}, msviz "
                                  f"{probs[1]}"))
    return initialised_postprocs(ours_postprocs, mod, target), found


def check_stored(case: str, mod: Any, target: Any, traces: list, work_dir: Any) -> int:
    """Store ``traces`` as stock tuning records of ``target``; every trial msviz reads back
    must replay (``with_decisions(trial, {})``, its own target) to the module stock's
    ``TuningRecord.as_measure_candidate()`` makes. Returns the count; raises on a mismatch
    (collected by the caller)."""
    import msviz
    from msviz import compat
    from msviz.trace import with_decisions

    ms = compat.ms
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    db = ms.database.JSONDatabase(work_dir=str(work_dir))
    workload = db.commit_workload(mod)
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    for i, trace in enumerate(traces):
        db.commit_tuning_record(ms.database.TuningRecord(trace, workload, [1e-6 * (i + 1)],
                                                         target, args))
    stock = {str(r.trace): r.as_measure_candidate().sch.mod
             for r in db.get_all_tuning_records()}
    run = msviz.open(work_dir)
    problems = []
    if len(run.trials) != len(traces):
        problems.append(f"{len(traces)} records stored, msviz reads {len(run.trials)} trials")
    for i in range(len(run.trials)):
        trial = run.trial(i)
        try:
            replay = with_decisions(trial, {})
        except Exception as err:
            problems.append(f"trial {i}: with_decisions raises {last_line(err)}")
            continue
        want = stock.get(str(trial.trace))
        if want is None:
            problems.append(f"trial {i}: its trace is none of the stored ones")
        elif not compat.structural_equal(replay.mod, want):
            problems.append(f"trial {i}: module: "
                            + first_difference(want.script(), replay.mod.script()))
        elif str(replay.trace) != str(trial.trace):
            problems.append(f"trial {i}: trace: "
                            + first_difference(str(trial.trace), str(replay.trace)))
        elif not compat.structural_equal(trial.mod, want):
            problems.append(f"trial {i}: trial.mod: "
                            + first_difference(want.script(), trial.mod.script()))
    if problems:
        raise AssertionError(f"{case}: stored trials: " + "; ".join(problems))
    return len(run.trials)


# -- one case --------------------------------------------------------------------------------


def run_case(target_name: str, workload: str, *, samples: int = SAMPLES_PER_SKETCH,
             max_seeds: int | None = None, work_dir: Any = None,
             verbose: bool = False) -> Tally:
    """Every sketch of one (target, workload): sample, replay both ways, compare.

    With ``work_dir`` (an empty directory), the schedules stock accepted are then stored there
    as stock tuning records and replayed from msviz's reading of them (:func:`check_stored`).
    """
    from msviz import compat

    setup()
    target, mod = make_target(target_name), make_mod(workload)
    if max_seeds is None:
        max_seeds = MAX_SEEDS_CUDA if target.kind.name == "cuda" else MAX_SEEDS
    ctx, sketches = stock_space(mod, target)
    postprocs = list(ctx.space_generator.postprocs)
    tally = Tally(sketches=len(sketches))
    case = f"{target_name}/{workload}"
    # msviz's choice of postprocs must be stock's, for the whole target
    ours = compat.default_rules(target)
    if ours.kind != RULE_KINDS[target_name]:
        tally.disagreements.append(Disagreement(
            case, "rule kind", f"stock {RULE_KINDS[target_name]}, msviz {ours.kind}"))
    stock_names = [type(p).__name__ for p in postprocs]
    if [type(p).__name__ for p in ours.postprocs] != stock_names:
        tally.disagreements.append(Disagreement(
            case, "default postprocs",
            f"stock {stock_names}, msviz {[type(p).__name__ for p in ours.postprocs]}"))
    rule_set_postprocs, found = check_rule_set(case, mod, target, sketches, postprocs,
                                               dict(ctx.space_generator.mutator_probs))
    tally.disagreements.extend(found)
    for s, sketch in enumerate(sketches):
        accepted = 0
        for seed in range(1, max_seeds + 1):
            if accepted == samples:
                break
            tally.samples += 1
            trace = sample(mod, sketch, seed)
            label = f"{case} sketch {s} seed {seed}"
            before = tally.stock_rejected
            compare_one(mod, target, target_name, workload, trace, postprocs, label, tally,
                        rule_set_postprocs=rule_set_postprocs, verbose=verbose)
            if tally.stock_rejected > before:
                continue
            accepted += 1
            edit = pick_edit(trace, mod, random.Random(1000 * s + seed))
            if edit is not None:
                compare_one(mod, target, target_name, workload, trace, postprocs,
                            f"{label} edit {edit[0]}={edit[1]}", tally, edit=edit,
                            verbose=verbose)
    if work_dir is not None and tally.stock_traces:
        try:
            tally.stored = check_stored(case, mod, target, tally.stock_traces, work_dir)
        except AssertionError as err:
            tally.disagreements.append(Disagreement(case, "stored trials", str(err)))
    return tally


def report(disagreements: list, shown: int = 3) -> str:
    """The disagreements, one line each, the first ``shown`` with their reproduction."""
    lines = [f"{len(disagreements)} disagreement(s) between stock and msviz:"]
    lines += [f"- {d.case}: {d.what}: {d.detail.splitlines()[0] if d.detail else ''}"
              for d in disagreements]
    lines += [f"\n{d}" for d in disagreements[:shown]]
    return "\n".join(lines)


def summary(tallies: dict[str, Tally]) -> str:
    """A table of the counts per target."""
    head = ("target", "sketches", "samples", "stock-rejected", "compared", "edits",
            "edit-rejected", "edit-compared", "build-failed-both", "tensorized", "rule-set",
            "stored", "disagreements")
    rows = [head] + [
        (name, t.sketches, t.samples, t.stock_rejected, t.compared, t.edits, t.edits_rejected,
         t.edits_compared, t.build_failed_both, t.tensorized, t.rule_set, t.stored,
         len(t.disagreements))
        for name, t in tallies.items()
    ]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in rows)


def main(argv: list[str]) -> int:
    wanted_targets = [a for a in argv if a in TARGETS] or list(TARGETS)
    wanted_workloads = [a for a in argv if a in WORKLOADS] or list(WORKLOADS)
    tallies: dict[str, Tally] = {}
    for target_name, workload in CASES:
        if target_name not in wanted_targets or workload not in wanted_workloads:
            continue
        if TARGETS[target_name]["kind"] == "cuda" and cuda_unavailable():
            print(f"-- {target_name}/{workload}: skipped: {cuda_unavailable()}")
            continue
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="msviz-differential-") as work_dir:
            tally = run_case(target_name, workload, work_dir=work_dir, verbose=True)
        print(f"-- {target_name}/{workload}: {time.perf_counter() - start:.1f} s")
        tallies.setdefault(target_name, Tally()).add(tally)
    print(summary(tallies))
    for tally in tallies.values():
        for d in tally.disagreements:
            print(d)
    return 1 if any(t.disagreements for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
