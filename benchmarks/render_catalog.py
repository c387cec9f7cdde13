"""Render time per InferenceService over the whole OME catalog.

Renders every ClusterServingRuntime in ../shared/data/ome-catalog (inputs as in the tests:
tests/render/catalog.py) N times and prints the mean, p50 and p99 time of one render, and
each as a ratio of a trivial baseline measured alongside: ``copy.deepcopy`` of the runtime
manifest. Absolute times are noisy; the ratios travel between machines.

    python benchmarks/render_catalog.py [N]      # N repetitions, default 20
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from pathlib import Path

# the repo root for tests.render.catalog, and tests/ for the test kit it builds on (as pytest sets it up)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policyd.clients.renderer.render import render
from tests.render.catalog import catalog_inputs


def _percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))]


def _summary(label: str, samples: list[float], baseline: list[float] | None) -> str:
    values = sorted(samples)
    figures = {"mean": statistics.fmean(values), "p50": _percentile(values, 0.5), "p99": _percentile(values, 0.99)}
    text = "  ".join(f"{key} {value * 1e6:8.1f} µs" for key, value in figures.items())
    if baseline is not None:
        base = sorted(baseline)
        ratios = (
            figures["mean"] / statistics.fmean(base),
            figures["p50"] / _percentile(base, 0.5),
            figures["p99"] / _percentile(base, 0.99),
        )
        pairs = zip(figures, ratios, strict=True)
        text += "   vs baseline: " + "  ".join(f"{key} {ratio:5.1f}x" for key, ratio in pairs)
    return f"{label:<22}{text}"


def main() -> None:
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    inputs = [inp for _, inp in catalog_inputs()]
    results = [render(inp) for inp in inputs]  # warm-up, and the counts below
    renders: list[float] = []
    baseline: list[float] = []
    clock = time.perf_counter
    for _ in range(repetitions):
        for inp in inputs:
            start = clock()
            copy.deepcopy(inp.runtime)
            middle = clock()
            render(inp)
            end = clock()
            baseline.append(middle - start)
            renders.append(end - middle)
    objects = sum(len(r.objects) for r in results)
    errors = sum(len(r.errors) for r in results)
    print(f"{len(inputs)} InferenceServices x {repetitions} repetitions: {objects} objects, {errors} errors each pass")
    print(_summary("baseline (deepcopy)", baseline, None))
    print(_summary("render", renders, baseline))


if __name__ == "__main__":
    main()
