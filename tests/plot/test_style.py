"""Tests of rooflab/plot/style.py: fit_layout, the margins measured once that the memory, time, decode (one panel) and
capacity charts are drawn with instead of constrained layout, keeps every tick label, axis label, title, text and
legend inside the figure, and places the panels where constrained layout does.
"""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from rooflab import load_gpu, load_model
from rooflab.plot import (capacity_chart, capacity_sweeps, decode_chart, decode_sweeps, memory_chart, memory_sweep,
                          time_chart, time_sweeps)

LLAMA8 = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


def _drawn_boxes(fig):
    """Each panel's bounding box of its texts as drawn (the titles' heights, not their widths, as constrained layout
    counts them), in pixels."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    return renderer, [ax.get_tightbbox(renderer, for_layout_only=True) for ax in fig.axes]


def _assert_inside(fig) -> None:
    _, boxes = _drawn_boxes(fig)
    page = fig.bbox
    for box in boxes:
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, (box, page)
    for left, right in zip(boxes, boxes[1:]):
        assert left.x1 <= right.x0, "two panels' texts overlap"


def _edges_in(fig) -> list[tuple[float, ...]]:
    width, height = fig.get_size_inches()
    return [(p.x0 * width, p.x1 * width, p.y0 * height, p.y1 * height) for p in (ax.get_position() for ax in fig.axes)]


CHARTS = {
    "capacity": lambda: capacity_chart(capacity_sweeps(LLAMA8, [H100])),
    "capacity, two panels": lambda: capacity_chart(capacity_sweeps(LLAMA8, [H100, H200])),
    "memory": lambda: memory_chart(memory_sweep(LLAMA8, [H100, H200])),
    "time": lambda: time_chart(time_sweeps(LLAMA8, [H100])),
    "time, two panels": lambda: time_chart(time_sweeps(LLAMA8, [H100, H200])),
    "decode": lambda: decode_chart(decode_sweeps(LLAMA8, [H100])),
}


@pytest.mark.parametrize("name", CHARTS)
def test_fitted_margins_are_constrained_layouts(name):
    fig = CHARTS[name]()
    assert fig.get_layout_engine() is None           # laid out once, not again at every savefig
    fitted = _edges_in(fig)
    _assert_inside(fig)
    fig.set_layout_engine("constrained")
    _drawn_boxes(fig)
    for ours, constrained in zip(fitted, _edges_in(fig)):
        assert ours == pytest.approx(constrained, abs=0.06)      # inches: within a few points of each edge


@pytest.mark.parametrize("model, gpu, lengths", [
    ("llama-3.2-1b", "mi355x", None),                # 32,884 sequences at 256 tokens: a wide tick label (10,000)
    ("llama-3.2-1b", "mi355x", [16, 64, 256]),       # hundreds of thousands: wider still
    ("llama-3.1-8b", "l4", None),                    # "max model length 131,072" an octave from the right edge
    ("mistral-7b-v0.1", "t4", None),                 # nothing fits: no line drawn at all
])
def test_capacity_chart_texts_stay_inside_the_figure(model, gpu, lengths):
    _assert_inside(capacity_chart(capacity_sweeps(load_model(model), [load_gpu(gpu)], context_lens=lengths)))


def test_the_header_of_several_panels_sits_above_their_titles_inside_the_figure():
    fig = capacity_chart(capacity_sweeps(LLAMA8, [H100, H200], tensor_parallel=2))
    renderer, boxes = _drawn_boxes(fig)
    header = fig._suptitle.get_window_extent(renderer)
    assert fig.bbox.y1 >= header.y1 and header.y0 >= max(box.y1 for box in boxes)
    assert header.x1 <= fig.bbox.x1 and "tensor parallel 2" in fig.get_suptitle()


def _drawn_texts(fig):
    """Every title, suptitle and annotation as drawn, with its full width (what for_layout_only leaves out)."""
    renderer, _ = _drawn_boxes(fig)
    texts = [t for ax in fig.axes for t in (ax.title, ax._left_title, ax._right_title, *ax.texts)] + \
        ([fig._suptitle] if fig._suptitle else [])
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_text()]


@pytest.mark.parametrize("gpus, tp", [(["mi355x"], 1), (["mi355x", "h200-sxm"], 2)])
def test_a_long_title_wraps_and_every_label_stays_inside(gpus, tp):
    """MiniMax-M2.5 on the MI355X: a per-layer weight format list made the title run off the right edge, and the
    max-model-length label sat past the right edge of the axes (196,608 of a 512k axis)."""
    fig = capacity_chart(capacity_sweeps(load_model("minimax-m2.5"), [load_gpu(g) for g in gpus], tensor_parallel=tp))
    page = fig.bbox
    drawn = _drawn_texts(fig)
    assert any("experts fp8_block" in text for text, _ in drawn)
    for text, box in drawn:
        assert page.x0 <= box.x0 and box.x1 <= page.x1 + 0.5, (text, box, page)
    label = [box for text, box in drawn if text.startswith("max model length")]
    assert label and all(box.x1 <= ax.bbox.x1 + 0.5 for box, ax in zip(label, fig.axes))


def test_wrap_title_breaks_at_separators_within_the_width():
    from matplotlib.figure import Figure

    from rooflab.plot.style import wrap_title

    fig = Figure(figsize=(4, 3))
    text = "headline\n" + "; ".join(f"part {i} of a long list, with commas" for i in range(8))
    wrapped = wrap_title(fig, text, 11)
    lines = wrapped.split("\n")
    width = int(0.98 * 4 * 72 / (11 * 0.6))
    assert lines[0] == "headline" and len(lines) > 3 and all(len(line) <= width for line in lines)
    assert " ".join(wrapped.split()) == " ".join(text.split())        # nothing lost, only broken
    assert wrap_title(fig, "short; title", 11) == "short; title"


def test_the_roofline_of_several_gpus_keeps_its_title_inside():
    """Two GPUs, one an AMD part with a long display name: the roofline's subtitle ran past the right edge."""
    from rooflab.plot import roofline_chart, roofline_data

    fig = roofline_chart(roofline_data(LLAMA8, [load_gpu("mi355x"), H200, load_gpu("mi325x")], seq_len=8192))
    page = fig.bbox
    for text, box in _drawn_texts(fig):
        assert page.x0 <= box.x0 and box.x1 <= page.x1 + 0.5, (text, box, page)
