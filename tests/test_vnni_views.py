"""The views of auto-tensorization on a real tensorized run (I8DP-0 on this VNNI CPU): the
trace's blockize / tensorize / auto_tensorize steps and the intrinsic, vpdpbusd in the code,
and which design spaces use the intrinsic."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz import compat
from msviz.engine import RuleSet
from msviz.space_generator import design_spaces_and_warnings
from msviz.trace import code
from msviz.trace.tensorize import (
    IntrinsicInfo,
    TensorizeInfo,
    TensorizeStep,
    intrinsic_info,
    tensorize_info,
)
from msviz.views.design_spaces import DesignSpaceInfo, SpaceInfo, design_space_info

HAS_VNNI = compat.target_has_features(compat.make_target("llvm"), ("avx512vnni",))
pytestmark = pytest.mark.skipif(not HAS_VNNI, reason="this CPU has no AVX-512 VNNI")


@pytest.fixture(scope="module")
def vnni_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A finished default session on I8DP-0: 8 trials, replayed from the design spaces."""
    session = msviz.Session(
        "I8DP-0", work_dir=tmp_path_factory.mktemp("vnni") / "wd", max_trials=8,
        trials_per_batch=8, strategy="replay", seed=2,
        evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
    session.start()
    assert session.wait(600) == "finished"
    return session


def _expected_steps(trace: Any) -> tuple[TensorizeStep, ...]:
    """Read the steps from the trace's Python text (independently of the instructions)."""
    out, postproc = [], False
    for i, line in enumerate(trace.as_python()):
        postproc = postproc or line.startswith("sch.enter_postproc(")
        intrin = re.search(r'tensor_intrin="([^"]*)"', line)
        ann = re.search(r'ann_key="meta_schedule.auto_tensorize"(?:, ann_val="([^"]*)")?', line)
        if "sch.blockize(" in line:
            out.append(TensorizeStep(i, "Blockize", None, postproc))
        elif "sch.tensorize(" in line:
            out.append(TensorizeStep(i, "Tensorize", intrin.group(1), postproc))
        elif ann and "sch.annotate(" in line:
            out.append(TensorizeStep(i, "Annotate", ann.group(1) or None, postproc))
        elif ann and "sch.unannotate(" in line:
            out.append(TensorizeStep(i, "Unannotate", None, postproc))
    return tuple(out)


def test_tensorize_info_of_the_best_trial(vnni_run: Any) -> None:
    best = vnni_run.open().best()
    desc, impl = compat.tensor_intrin_scripts("dot_16x4_vnni")
    expected = TensorizeInfo(
        _expected_steps(best.trace),
        (IntrinsicInfo("dot_16x4_vnni", desc, impl, ("vpdpbusd",)),))
    info = tensorize_info(best)
    assert info == expected
    kinds = [s.kind for s in info.steps]
    assert "Blockize" in kinds and kinds[-1] == "Tensorize" and info.steps[-1].postproc
    # the description is the pattern, the implementation msviz's LLVM-22 one
    assert "T.sblock(\"update\")" in desc and "vpdpbusd" not in desc
    assert "llvm.x86.avx512.vpdpbusd.512" in impl and "uint8x64" in impl


def test_intrinsic_info_names_a_missing_intrinsic() -> None:
    with pytest.raises(KeyError, match="'dot_16x4_nope'"):
        intrinsic_info("dot_16x4_nope")


def test_special_instructions_in_the_best_kernel(vnni_run: Any) -> None:
    best = vnni_run.open().best()
    asm = code.generated_source(best, vnni_run.target, "asm")
    lines = asm.splitlines()
    want = [i for i, line in enumerate(lines) if re.match(r"\s*vpdpbusd\s", line)]
    found = code.special_instructions(asm)
    assert found == code.SpecialInstructions({"vpdpbusd": len(want)}, tuple(want))
    ll = code.generated_source(best, vnni_run.target, "ll")
    assert code.special_instructions(ll).counts.get("vpdpbusd", 0) >= 1


def test_special_instructions_on_hand_written_text() -> None:
    asm = "\tvpdpbusd\tzmm1, zmm2, zmm3\n\tvmovdqu64\tzmm0, [rax]\n" \
          "\tvpmaddubsw\tzmm4, zmm5, zmm6\n\tvpmaddwd zmm4, zmm4, zmm7\n; vpdpbusds\n"
    assert code.special_instructions(asm) == code.SpecialInstructions(
        {"vpdpbusd": 1, "vpmaddubsw": 1, "vpmaddwd": 1, "vpdpbusds": 1}, (0, 2, 3, 4))
    assert code.special_instructions("vpdpbusdx vpdpbusd_ab") == code.SpecialInstructions(
        {}, ())


def test_design_space_info_says_which_spaces_use_the_intrinsic() -> None:
    spaces, warnings = design_spaces_and_warnings("I8DP-0")
    info = design_space_info(spaces, warnings)
    uses = tuple(("dot_16x4_vnni",) if any(
        'ann_val="dot_16x4_vnni"' in line for line in s.trace) else () for s in spaces)
    assert tuple(s.intrinsics for s in info.spaces) == uses
    assert info.tensorized == tuple(i for i, u in enumerate(uses) if u) != ()
    assert info.warnings == ()
    # The whole info by hand. I8DP-0 is 64x64x64. Tensorized (spaces 0-2): i in 4 tiles of 64
    # (6 twos in 4 parts: C(9, 3) = 84), j's 64/16 = 4 in 4 tiles (C(5, 3) = 10), k's 64/4 =
    # 16 in 2 (5), unroll of 4 choices: 84 x 10 x 5 x 4 = 16,800. Not tensorized (3-5): i and
    # j 84 each, k 64 in 2 (7), unroll 4: 197,568. Spaces differ in where the unroll sits.
    tensorized = ((11, "SamplePerfectTile", 84), (13, "SamplePerfectTile", 10),
                  (15, "SamplePerfectTile", 5))
    plain = ((4, "SamplePerfectTile", 84), (6, "SamplePerfectTile", 84),
             (8, "SamplePerfectTile", 7))
    by_hand = [((*tensorized, (21, "SampleCategorical", 4)), 16800, ("dot_16x4_vnni",)),
               ((*tensorized, (23, "SampleCategorical", 4)), 16800, ("dot_16x4_vnni",)),
               ((*tensorized, (23, "SampleCategorical", 4)), 16800, ("dot_16x4_vnni",)),
               ((*plain, (16, "SampleCategorical", 4)), 197568, ()),
               ((*plain, (16, "SampleCategorical", 4)), 197568, ()),
               ((*plain, (14, "SampleCategorical", 4)), 197568, ())]
    assert len(spaces) == len(by_hand)
    expected = DesignSpaceInfo(tuple(
        SpaceInfo(i, "\n".join(re.sub(r",?\s*decision=[^)]*\)$", ")", line) for line in s.trace),
                  "\n".join(s.trace), sites, size, s.script, intrinsics)
        for i, (s, (sites, size, intrinsics)) in enumerate(zip(spaces, by_hand, strict=True))),
        ())
    assert info == expected
    assert info.tensorized == (0, 1, 2)


def test_design_space_view_shows_intrinsic_and_warning() -> None:
    from msviz.widgets import DesignSpaceView

    view = DesignSpaceView("I8DP-0", target="llvm")
    assert "use a tensor intrinsic" in view.summary.value
    assert view.summary.value.count("dot_16x4_vnni") == len(view.info.tensorized)
    tensorized = view.info.tensorized[0]
    view.space.value = tensorized
    assert "uses tensor intrinsic <code>dot_16x4_vnni</code>" in view.detail.value

    rules = RuleSet.default(compat.make_target("llvm"))
    rules.set("MultiLevelTilingWithIntrin", intrin_name="dot_16x4_nope")
    view.show_rules(rules)
    assert view.info.tensorized == ()
    assert view.info.warnings == (
        "tensor intrinsic 'dot_16x4_nope' does not exist (not registered with TVM; x86 ones: "
        "dot_16x4_avx512, dot_16x4_vnni): tuning without it",)
    assert "msviz-warning" in view.summary.value and "dot_16x4_nope" in view.summary.value


def test_trace_view_marks_tensorize_and_shows_the_intrinsic(vnni_run: Any) -> None:
    from msviz.widgets import Selection, TraceView

    run = vnni_run.open()
    best = run.best()
    sel = Selection()
    view = TraceView(run.trial, selection=sel, target=vnni_run.target)
    sel.trial = best.index
    steps = _expected_steps(best.trace)
    assert view.table.value.count('class="msviz-tensorize"') == len(steps)
    assert "tensorize dot_16x4_vnni</span>" in view.table.value
    assert "tensorized with <code>dot_16x4_vnni</code>" in view.title.value
    assert view.intrinsics.value.count('class="msviz-intrinsic"') == 1
    assert "vpdpbusd.512" in view.intrinsics.value and "description" in view.intrinsics.value


def test_code_view_highlights_vpdpbusd(vnni_run: Any) -> None:
    from msviz.widgets import CodeView, Selection

    run = vnni_run.open()
    sel = Selection()
    view = CodeView(run.trial, selection=sel, target=vnni_run.target)
    view.kind.value = "Assembly"
    sel.trial = run.best().index
    asm = code.generated_source(run.best(), vnni_run.target, "asm")
    n = len(code.special_instructions(asm).lines)
    # by hand: the lines whose instruction is vpdpbusd (the mnemonic is the first word)
    mine = [i for i, line in enumerate(asm.splitlines())
            if line.split() and line.split()[0] == "vpdpbusd"]
    assert n == len(mine) > 0 and code.special_instructions(asm).lines == tuple(mine)
    assert view.code.value.count('class="msviz-mark"') == n
    assert f"<code>vpdpbusd</code> x{n}" in view.title.value
    lines = asm.splitlines()
    first = code.special_instructions(asm).lines[0]
    assert "msviz-special-excerpt" in view.code.value
    assert f"{first + 1:>6}: " in view.code.value and lines[first].split()[0] in view.code.value


def test_fresh_process_replays_and_builds_the_tensorized_trial(vnni_run: Any) -> None:
    """Opening the work dir in a new process registers msviz's intrinsic before replaying."""
    import subprocess
    import sys

    script = (
        "import msviz, sys\n"
        "from msviz.trace import code\n"
        "best = msviz.open(sys.argv[1]).best()\n"
        "print(code.generated_source(best, 'llvm', 'asm').count('vpdpbusd'))\n")
    out = subprocess.run([sys.executable, "-c", script, str(vnni_run.work_dir)],
                         capture_output=True, text=True, timeout=300,
                         cwd=Path(msviz.__file__).parent.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) > 0
