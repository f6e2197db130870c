"""Blocked cosine similarity and union-find: the pairs a full matrix would give, in tiles; groups by first row."""

from __future__ import annotations

import numpy as np
import pytest

from aiforge.semantic.similarity import Groups, pair_tiles, unit_rows


def all_pairs(vectors: np.ndarray, floor: float, block_rows: int) -> set[tuple[int, int]]:
    return {
        (int(left), int(right))
        for tile in pair_tiles(unit_rows(vectors), floor, block_rows)
        for left, right in zip(tile.left, tile.right, strict=True)
    }


def test_tiles_find_exactly_the_pairs_of_the_full_matrix_across_tile_edges() -> None:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(20, 16))
    vectors = np.repeat(centres, 15, axis=0) + 0.3 * rng.normal(size=(300, 16))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    full = unit @ unit.T
    expected = {(i, j) for i in range(300) for j in range(i + 1, 300) if full[i, j] >= 0.8}
    assert len(expected) > 500  # the floor is met within and (some) across tiles
    assert all_pairs(vectors, 0.8, block_rows=64) == expected  # 300 rows: 5 x 5 tiles, the last one ragged
    assert all_pairs(vectors, 0.8, block_rows=1000) == expected


def test_tiles_report_each_pairs_similarity_and_never_a_row_with_itself() -> None:
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [2.0, 0.0]])
    tiles = list(pair_tiles(unit_rows(vectors), 0.5, block_rows=2))
    found = {
        (int(t.left[k]), int(t.right[k])): float(t.similarity[k]) for t in tiles for k in range(len(t.left))
    }
    assert found == pytest.approx({(0, 1): 0.6, (0, 2): 1.0, (1, 2): 0.6})


def test_unit_rows_ignore_scale_and_a_zero_vector_is_similar_to_nothing() -> None:
    vectors = np.array([[3.0, 4.0], [0.0, 0.0], [30.0, 40.0]])
    unit = unit_rows(vectors)
    assert np.allclose(unit[0], unit[2]) and not unit[1].any()
    assert all_pairs(vectors, 0.01, block_rows=2) == {(0, 2)}


@pytest.mark.parametrize("bad", [np.zeros(3), np.array([[1.0, np.nan]]), np.array([[np.inf, 0.0]])])
def test_unit_rows_refuse_what_is_not_a_finite_matrix(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="2-D|NaN or infinite"):
        unit_rows(bad)


def test_groups_are_represented_by_their_smallest_position_whatever_the_join_order() -> None:
    forward, backward = Groups(6), Groups(6)
    pairs = [(4, 5), (2, 4), (1, 5), (0, 3)]
    for left, right in pairs:
        forward.join(left, right)
    for left, right in reversed(pairs):
        backward.join(right, left)
    assert forward.roots().tolist() == backward.roots().tolist() == [0, 1, 1, 0, 1, 1]
