"""The closed sets (rooflab/vocab.py): what each layer kind's cache keeps, asked of the kind."""

from __future__ import annotations

from rooflab.vocab import LayerKind


def test_layer_kinds_say_what_their_cache_keeps():
    """A shared prefix serves the kinds whose cache holds every earlier token; a split by position shares out
    every softmax kind's pages but not a linear layer's fixed state."""
    assert {k for k in LayerKind if k.keeps_every_token} == {LayerKind.full, LayerKind.mla}
    assert {k for k in LayerKind if not k.splits_by_position} == {LayerKind.linear}
