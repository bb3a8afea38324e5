"""Human-readable rendering of a verdict (plain text: the bare GPU host has no rich)."""

from __future__ import annotations

from typing import Any


def _t(stats: dict[str, Any] | None) -> str:
    if not stats or "median_ms" not in stats:
        return (stats or {}).get("error", "-")[:80] if stats else "-"
    return (f"{stats['median_ms']:.4f} ms (IQR {stats['iqr_ms']:.4f}, spread {stats['spread_pct']:.1f}%, "
            f"min {stats['min_ms']:.4f}, n={stats['reps']})")


def format_verdict(v: dict[str, Any]) -> str:
    dev = v.get("device") or {}
    lines = [
        f"task      {v.get('task')}  (size {v.get('size')}, backend {v.get('backend')})",
        f"device    {dev.get('name', v.get('device_name', '?'))}",
        f"status    {v['status'].upper()}" + ("  (cached verdict)" if v.get("cached") else ""),
        f"reason    {v.get('reason', '')}",
    ]
    if v.get("compile_seconds") is not None:
        lines.append(f"compile   {v['compile_seconds']:.1f} s")
    for t in v.get("trials", []):
        mark = "ok  " if t.get("passed") else "FAIL"
        extra = t.get("skipped") or (f"max abs err {t['max_abs_err']:.3g}" if t.get("max_abs_err") is not None else "")
        lines.append(f"  {mark} {t['trial']}: {extra}" + ("" if t.get("passed") else f"  {t.get('detail', '')}"))
    timing = v.get("timing") or {}
    for name in ("candidate", "eager", "compile"):
        if name in timing:
            lines.append(f"{name:<9} {_t(timing[name])}")
    if v.get("speedup_vs_eager") is not None:
        lines.append(f"speedup   {v['speedup_vs_eager']:.3f}x vs eager"
                     + (f", {v['speedup_vs_compile']:.3f}x vs torch.compile" if v.get("speedup_vs_compile") else ""))
    for f in v.get("flags", []):
        lines.append(f"flag      {f['name']} ({'rejects' if f['rejects'] else 'warning'}): {f['reason']}")
    if v["status"] == "compile_error" and v.get("compiler_message"):
        lines.append("compiler output (tail):")
        lines += ["  " + ln for ln in v["compiler_message"].strip().splitlines()[-25:]]
    return "\n".join(lines)
