"""pandas integration: typed columns from structured outputs.

pandas is imported on first use, never when this package is imported.
"""

from aiforge.dataframes.columns import OUTPUT_COLUMN, output_columns

__all__ = ["OUTPUT_COLUMN", "output_columns"]
