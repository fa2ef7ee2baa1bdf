"""pruned_period's coarse loop read from its SASS, without a GPU: instructions
per AT_ONCE shifts (loop head to the first ballot), float64 operations among
them, and the longest dependency chain to each shift's ballot, in cycles by
rough latency classes (LATENCY; the loop's invariants ready at 0).

On this session's builds the chain ordered the measured kernels where the
instruction count did not (K2-like kernel on the H200, NOTES.md step 83); the
next build it predicted faster was not (step 84), so it is a rough guide only:

    a44971f   125 instructions, chain 200 cycles
    A (may_win on q, no fmax)   107, 200   no gain
    e577f91 (k from one fma)    103, 152   -4.3 %
    0b52d1b (R in three fmas)    99, 144   -1.2 %
    r_after_k.patch             100, 136   no gain (measured the next session:
                                           reports/gpu/pruned_chain_2026-11-29d_H200/r_after_k/)

    python sass_chain.py build OUT          # OUT.cubin, OUT.sass of the working tree's pruned.cu
                                            # (nvdisasm: the nvidia-cuda-nvdisasm wheel, NVDISASM)
    python sass_chain.py OUT.sass [...]     # the figures above
    python sass_chain.py --path OUT.sass    # the first shift's chain, instruction by instruction
"""
import os
import re
import subprocess
import sys

LATENCY = {"LDS": 30, "LDC": 20, "ULDC": 4, "DADD": 8, "DMUL": 8, "DFMA": 8, "DSETP": 8, "I2F": 12, "POPC": 6,
           "VOTE": 6}  # others 4
WIDE = ("DADD", "DMUL", "DFMA", "DSETP", "I2F.F64", "F2F.F64", "LDS.64", "LDC.64")
NOT_TIMED = ("BRA", "BSSY", "BSYNC", "YIELD")
PREDICATE_DEST = ("DSETP", "ISETP", "PLOP3", "VOTE", "P2R", "R2P")


def build(out):
    """The working tree's pruned.cu for SHARED_BLOCK threads, as pruned.py compiles it, disassembled."""
    from backends.implementations.pruned import SHARED_BLOCK, PrunedBackend
    from backends.kernel_cache import nvcc_command

    defines = {"BLOCK": SHARED_BLOCK, **PrunedBackend().kernel_defines(SHARED_BLOCK)}
    subprocess.run(nvcc_command("pruned.cu", "sm_90", defines, ("-lineinfo",), out + ".cubin"), check=True)
    nvdisasm = os.environ.get("NVDISASM", "nvdisasm")
    sass = subprocess.run([nvdisasm, "-g", "-c", out + ".cubin"], capture_output=True, text=True, check=True)
    open(out + ".sass", "w").write(sass.stdout)


def loop(path):
    """The coarse loop's instructions: from the label that the take's r0 loop branches back to."""
    lines = open(path).read().splitlines()
    for n, row in enumerate(lines):
        if re.search(r"ISETP.GE.U32.AND P\d, PT, R\d+, 0x4, PT", row) and "BRA" in lines[n + 1] and n > 10000:
            label = re.search(r"\(\.(L_x_\d+)\)", lines[n + 1]).group(1)
            head = next(k for k, r in enumerate(lines) if r.startswith("." + label + ":"))
            return [m.group(1) for r in lines[head:n + 2] if (m := re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", r))]
    raise SystemExit(f"{path}: no coarse loop found")


def registers(operand, wide):
    """Registers an operand names; ``wide``: each R or UR with its pair."""
    out = []
    for name in re.findall(r"\b(U?R\d+|U?P\d)\b", operand):
        out.append(name)
        if wide and re.match(r"U?R\d", name):
            prefix = "UR" if name.startswith("UR") else "R"
            out.append(f"{prefix}{int(name[len(prefix):]) + 1}")
    return out


def timed(instructions):
    """(text, finish cycle, index of the row it waited for) of each timed instruction."""
    ready, made_by, rows = {}, {}, []
    for text in instructions:
        guard = ""
        if text.startswith("@"):
            guard, text = text.split(None, 1)
        op, _, rest = text.partition(" ")
        base = op.split(".")[0]
        if base in NOT_TIMED:
            continue
        operands = [o.strip() for o in rest.split(",")] if rest else []
        wide = op.startswith(WIDE)
        n_dest = 2 if base in ("DSETP", "ISETP") and len(operands) > 1 and operands[1].startswith("P") else 1
        dests = [r for o in operands[:n_dest] for r in registers(o, wide and base not in PREDICATE_DEST)]
        sources = [r for o in operands[n_dest:] for r in registers(o, wide and not o.startswith("["))]
        start, parent = 0, None
        for r in sources + registers(guard, False):
            if ready.get(r, 0) > start:
                start, parent = ready[r], made_by[r]
        rows.append((text, start + LATENCY.get(base, 4), parent))
        for r in dests:
            ready[r], made_by[r] = rows[-1][1], len(rows) - 1
    return rows


def path(rows, end):
    out = []
    while end is not None:
        out.append(rows[end])
        end = rows[end][2]
    return out[::-1]


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    elif sys.argv[1] == "--path":
        rows = timed(loop(sys.argv[2]))
        first = next(k for k, row in enumerate(rows) if row[0].startswith("VOTE"))
        for text, done, _ in path(rows, first):
            print(f"{done:5d}  {text}")
    else:
        for sass in sys.argv[1:]:
            body = loop(sass)
            before = body[:next(k for k, x in enumerate(body) if x.startswith("VOTE"))]
            dp = sum(x.split()[0].split(".")[0] in ("DADD", "DMUL", "DFMA", "DSETP") for x in before)
            ballots = [done for text, done, _ in timed(body) if text.startswith("VOTE")][:2]
            print(f"{sass}: {len(before)} instructions, {dp} float64, ballots at {ballots} cycles")
