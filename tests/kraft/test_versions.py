"""metadata.version levels and the ELR default, as Kafka defines them
(`server-common/.../MetadataVersion.java` and `EligibleLeaderReplicasVersion.java` of the
4.3 branch)."""

from __future__ import annotations

import pytest

from kraftlake.kraft.versions import MV_4_3_IV0, elr_on_by_default, parse_metadata_version
from kraftlake.simulate.run import elr_default

# IBP_x_y_IVn(level, ...) of MetadataVersion.java, 4.3 branch
KAFKA_LEVELS = {"3.0-IV1": 1, "3.3-IV0": 4, "3.7-IV2": 17, "4.0-IV1": 23, "4.1-IV0": 26,
                "4.1-IV1": 27, "4.2-IV0": 28, "4.2-IV1": 29, "4.3-IV0": 30}


@pytest.mark.parametrize(("name", "level"), sorted(KAFKA_LEVELS.items()))
def test_release_names_map_to_kafkas_feature_levels(name: str, level: int) -> None:
    assert parse_metadata_version(name) == level


def test_a_release_alone_is_its_last_level_and_unknown_names_are_refused() -> None:
    assert parse_metadata_version("4.2") == 29
    assert parse_metadata_version("4.3") == MV_4_3_IV0
    assert parse_metadata_version(" 27 ") == 27
    with pytest.raises(ValueError):
        parse_metadata_version("4.9-IV0")


def test_elr_is_on_by_default_from_4_1_iv0() -> None:
    # ELRV_1(1, MetadataVersion.IBP_4_1_IV0, ...): the bootstrap level of ELR version 1
    assert not elr_on_by_default(25) and elr_on_by_default(26) and elr_on_by_default(30)
    assert not elr_default("mixed", 25) and elr_default("mixed", 26)
    # the `elr` scenario wants ELR wherever the cluster supports it (4.0-IV1 on)
    assert elr_default("elr", 23) and not elr_default("elr", 22)
