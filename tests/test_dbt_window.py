"""The Python models' config, read by tierlens.analysis.dbt_window: a var left unset takes the
parameter dataclass's default, a value is cast to the field's type, and a wrong key or value is an
error naming the config key (dbt renders an unset var as None, '' or 'None')."""

from __future__ import annotations

import pytest

from tierlens.analysis.dbt_window import params_from_config
from tierlens.analysis.uncertainty import ABParams


def test_unset_vars_take_the_dataclass_defaults_and_set_ones_are_cast():
    params = params_from_config(
        ABParams, {"arm_a": "A1", "arm_b": None, "seed": "7", "min_core_hours": "12.5", "block": "None"}, "ab_params"
    )
    assert (params.arm_a, params.arm_b, params.block) == ("A1", "B", "hour")
    assert (params.seed, params.min_core_hours, params.min_jobs) == (7, 12.5, 30)
    assert isinstance(params.seed, int) and isinstance(params.min_core_hours, float)
    assert params_from_config(ABParams, None, "ab_params") == ABParams()


def test_an_unknown_key_is_named_with_the_keys_there_are():
    with pytest.raises(ValueError, match=r"config ab_params: unknown key\(s\) \['ab_seed'\]; ABParams has .*'seed'"):
        params_from_config(ABParams, {"ab_seed": 1}, "ab_params")


def test_a_value_of_the_wrong_type_names_its_key():
    with pytest.raises(ValueError, match=r"config ab_params\.min_jobs: 'many' is not a int"):
        params_from_config(ABParams, {"min_jobs": "many"}, "ab_params")
