import pickle

import pytest

from cudal2.config import Config, ConfigError


def test_defaults_are_valid():
    assert Config.from_dict(Config().to_dict()) == Config()


def test_unknown_key_is_rejected(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[verify]\nerror_ratoi = 3.0\n")
    with pytest.raises(ConfigError, match="error_ratoi"):
        Config.load(f)


def test_unknown_section_is_rejected():
    with pytest.raises(ConfigError, match="verfy"):
        Config.from_dict({"verfy": {}})


def test_wrong_type_is_rejected():
    with pytest.raises(ConfigError, match="timing.repeats"):
        Config.from_dict({"timing": {"repeats": "many"}})


def test_bool_is_not_an_int():
    with pytest.raises(ConfigError, match="run.gpu"):
        Config.from_dict({"run": {"gpu": True}})


def test_out_of_range_is_rejected():
    with pytest.raises(ConfigError, match="error_ratio"):
        Config.from_dict({"verify": {"error_ratio": 1.0}})


def test_list_choices_are_checked():
    with pytest.raises(ConfigError, match="modes"):
        Config.from_dict({"timing": {"modes": ["offline", "fast"]}})


def test_int_given_for_float_becomes_float():
    assert isinstance(Config.from_dict({"verify": {"error_ratio": 3}}).verify.error_ratio, float)


def test_bad_toml_names_the_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[verify\n")
    with pytest.raises(ConfigError, match="c.toml"):
        Config.load(f)


def test_config_pickles_whole_for_workers():
    c = Config.from_dict({"timing": {"repeats": 7}})
    assert pickle.loads(pickle.dumps(c)) == c


def test_digest_changes_with_a_setting():
    assert Config().digest() != Config.from_dict({"timing": {"repeats": 7}}).digest()
