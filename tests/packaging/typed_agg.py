"""What mypy knows ``agg`` returns for each of its forms: read by ``test_types.py``, never run.

pandas' stubs know no ``df.aiforge``, so a typed notebook or module names the accessor class.
"""

from __future__ import annotations

from typing import Any, Literal, assert_type

import pandas as pd
from pydantic import BaseModel

from aiforge.core.report import OperationReport
from aiforge.dataframes.frame_accessor import DataFrameOperations
from aiforge.dataframes.groupby_accessor import GroupByOperations
from aiforge.dataframes.series_accessor import SeriesOperations
from aiforge.semantic.agg.frames import AggText


class Theme(BaseModel):
    name: str


frame = pd.DataFrame({"review": ["good"], "kind": ["a"]})
reviews = DataFrameOperations(frame)
assert_type(reviews.agg("What do the {review}s say?"), AggText)
assert_type(reviews.agg("How many {review}s are good?", output=int), int)
assert_type(reviews.agg("Any refund in the {review}s?", None, bool), bool)
assert_type(reviews.agg("The main theme of the {review}s", output=Theme), Theme)
assert_type(reviews.agg("The themes of the {review}s", output=list[str]), list[str])
assert_type(reviews.agg("Mood of the {review}s", output=Literal["good", "bad"]), Any)  # a form, not a type
assert_type(reviews.agg("Sum up the {review}s", by="kind"), pd.Series)
assert_type(reviews.agg("Count the {review}s", by=["kind"], output=int), pd.Series)
assert_type(SeriesOperations(frame["review"]).agg("How many are good?", output=int), int)
assert_type(GroupByOperations(frame.groupby("kind")).agg("Sum up {review}"), pd.Series)
assert_type(reviews.last_report, OperationReport | None)
