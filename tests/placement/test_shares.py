"""VC shares apportioned by largest remainder (issue 36): no unit of the cluster is lost to
rounding, and a VC whose share gives it nothing is found."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from clusters.placement import Resources, apportion, empty_shares


def test_it_gives_60_and_40_percent_of_two_cpus_one_each():
    quotas = apportion({"default": Decimal(60), "research": Decimal(40)}, Resources(gpu=0, cpu=2, memory_mb=8000))
    assert quotas == {
        "default": Resources(gpu=0, cpu=1, memory_mb=4800),
        "research": Resources(gpu=0, cpu=1, memory_mb=3200),
    }


def test_it_breaks_a_tie_by_the_larger_share_then_the_name():
    quotas = apportion({"c": Decimal(33), "b": Decimal(33), "a": Decimal(34)}, Resources(cpu=2))
    assert {name: q.cpu for name, q in quotas.items()} == {"a": 1, "b": 1, "c": 0}


def test_it_leaves_unshared_what_the_shares_do_not_cover():
    quotas = apportion({"a": Decimal(30), "b": Decimal(30)}, Resources(cpu=3))
    assert sum(q.cpu for q in quotas.values()) == 1  # 60 % of 3 CPUs is 1.8: one whole CPU


def test_it_names_the_resources_a_share_gives_none_of():
    quotas = apportion({"c": Decimal(33), "b": Decimal(33), "a": Decimal(34)}, Resources(gpu=1, cpu=2, memory_mb=900))
    assert empty_shares(quotas, Resources(gpu=1, cpu=2, memory_mb=900)) == {"b": ["gpu"], "c": ["gpu", "cpu"]}


@given(
    shares=st.lists(st.integers(min_value=0, max_value=100), min_size=1, max_size=6).filter(lambda s: sum(s) <= 100),
    total=st.integers(min_value=0, max_value=10_000),
)
def test_it_hands_out_exactly_the_units_the_shares_add_up_to_each_within_one_of_its_exact_share(shares, total):
    named = {f"vc{i}": Decimal(share) for i, share in enumerate(shares)}
    quotas = apportion(named, Resources(gpu=total, cpu=total, memory_mb=total))
    assert sum(q.cpu for q in quotas.values()) == total * sum(shares) // 100
    for name, share in named.items():
        exact = Decimal(total) * share / 100
        assert exact - 1 < quotas[name].cpu < exact + 1
