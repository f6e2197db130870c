"""Groups from cosine similarity in tiles: each row a duplicate of its group's first row, never chained; the same
groups and band pairs whatever the tile size; unit rows."""

from __future__ import annotations

import numpy as np
import pytest

from aiforge.semantic.similarity import BandOverflow, leader_groups, unit_rows


def clustered(seed: int = 7, count: int = 300) -> np.ndarray:
    """``count`` unit rows around 20 centres, in random order: groups overlap, so a chain is easy to make."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, 16))
    vectors = np.repeat(centres, count // 20, axis=0) + 0.45 * rng.normal(size=(count, 16))
    return unit_rows(vectors[rng.permutation(count)])


def test_every_row_is_a_duplicate_of_the_first_row_of_its_group() -> None:
    unit = clustered()
    groups = leader_groups(unit, 0.8)
    representative = groups.representative
    rows = np.arange(len(unit))
    leads = representative == rows
    members = ~leads
    assert 20 < leads.sum() < 280 and (representative <= rows).all()
    assert (representative[representative] == representative).all()  # a group's first row leads it
    reached = np.einsum("ij,ij->i", unit[members], unit[representative[members]])
    assert (reached >= 0.8).all() and np.allclose(groups.similarity[members], reached)
    full = unit @ unit.T
    for row in rows[leads]:  # a row leads only when it is no duplicate of an earlier one that leads
        assert (full[row, rows[leads & (rows < row)]] < 0.8).all()
    for row in rows[members]:  # and joins the most similar of those
        assert full[row, representative[row]] == pytest.approx(full[row, rows[leads & (rows < row)]].max(), abs=1e-6)


def test_a_chain_of_close_rows_is_not_one_group() -> None:
    # Each row 0.95 from the one before: 0 leads, 1 joins it, 2 is only 0.805 from 0 and leads, and so on.
    step = np.arccos(0.95)
    chain = np.array([[np.cos(k * step), np.sin(k * step)] for k in range(6)])
    assert leader_groups(unit_rows(chain), 0.9).representative.tolist() == [0, 0, 2, 2, 4, 4]


@pytest.mark.parametrize("block_rows", [1, 7, 64, 1000])
def test_tiles_give_the_groups_and_band_pairs_of_one_tile(block_rows: int) -> None:
    unit = clustered()
    whole = leader_groups(unit, 0.8, 0.6, block_rows=len(unit))
    tiled = leader_groups(unit, 0.8, 0.6, block_rows=block_rows)
    assert tiled.representative.tolist() == whole.representative.tolist()
    assert len(whole.band) > 100
    assert sorted((a, b) for a, b, _ in tiled.band) == sorted((a, b) for a, b, _ in whole.band)


def test_band_pairs_are_the_pairs_of_first_rows_in_the_band() -> None:
    unit = clustered()
    groups = leader_groups(unit, 0.8, 0.6)
    leads = np.flatnonzero(groups.representative == np.arange(len(unit)))
    full = unit @ unit.T
    expected = {(int(a), int(b)) for a in leads for b in leads if a < b and 0.6 <= full[a, b] < 0.8}
    assert {(a, b) for a, b, _ in groups.band} == expected
    assert all(full[a, b] == pytest.approx(similarity, abs=1e-6) for a, b, similarity in groups.band)
    assert leader_groups(unit, 0.8).band == []  # no floor: no band


def test_too_many_band_pairs_overflow_before_they_are_listed() -> None:
    unit = clustered()
    count = len(leader_groups(unit, 0.8, 0.6).band)
    with pytest.raises(BandOverflow, match=f"more than {count - 1} pairs"):
        leader_groups(unit, 0.8, 0.6, max_band=count - 1)
    assert len(leader_groups(unit, 0.8, 0.6, max_band=count).band) == count


def test_unit_rows_ignore_scale_and_a_zero_vector_is_similar_to_nothing() -> None:
    vectors = np.array([[3.0, 4.0], [0.0, 0.0], [30.0, 40.0]])
    unit = unit_rows(vectors)
    assert np.allclose(unit[0], unit[2]) and not unit[1].any()
    assert leader_groups(unit, 0.01).representative.tolist() == [0, 1, 0]


@pytest.mark.parametrize("bad", [np.zeros(3), np.array([[1.0, np.nan]]), np.array([[np.inf, 0.0]])])
def test_unit_rows_refuse_what_is_not_a_finite_matrix(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="2-D|NaN or infinite"):
        unit_rows(bad)
