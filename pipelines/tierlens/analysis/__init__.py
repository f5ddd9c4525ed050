"""Statistics for the analytics marts: A/B differences with bootstrap intervals and permutation
p-values (a seeded Poisson block bootstrap), and small exact formulas the marts and tests share (Jain's index).

The dbt Python model ``marts.ab_uncertainty`` calls :func:`ab_test` once per comparison; this
package holds no SQL and no warehouse access, so it is tested on plain arrays.
"""

from .ab import ABResult, ab_test, blocks_from_jobs, jain_index

__all__ = ["ABResult", "ab_test", "blocks_from_jobs", "jain_index"]
