"""The link's round-trip decisions (scrapy_focus/cluster/pacing.py), as pure functions."""

from __future__ import annotations

import pytest

from scrapy_focus.cluster.pacing import Pacing


def test_a_lease_waits_until_the_buffer_is_down_to_the_downloaders_room() -> None:
    pacing = Pacing(ahead=4)
    assert pacing.lease_need(room=16, buffered=0) == 20  # start: fill it all, and ahead
    assert pacing.lease_need(room=1, buffered=5) == 0  # enough waiting: no trip
    assert pacing.lease_need(room=1, buffered=1) == 4  # ran down: refill in one lease
    assert Pacing(ahead=0).lease_need(room=3, buffered=3) == 0


def test_empty_leases_of_an_idle_node_back_off_doubling_and_work_resets_it() -> None:
    pacing = Pacing(retry_min=0.02, retry_max=0.5)
    waits = []
    for _ in range(7):
        pacing.leased(now=0.0, asked=4, got=0, wait=None, busy=False)
        waits.append(pacing.lease_after)
    assert waits == [0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5]
    pacing.leased(now=1.0, asked=4, got=4, wait=0.0, busy=False)
    assert pacing.lease_after == 1.0 and pacing.retry == 0.0
    # What a lease brought, the node holds: it leases again with its releases.
    pacing.leased(now=2.0, asked=4, got=1, wait=None, busy=True)
    assert pacing.lease_after == float("inf")


def test_a_node_with_requests_out_leases_again_with_its_releases_not_by_polling() -> None:
    pacing = Pacing(retry_min=0.02, retry_max=0.5)
    pacing.leased(now=0.0, asked=4, got=1, wait=None, busy=True)
    # No lease round of its own: the lease rides its rounds (releases, heartbeats).
    assert pacing.lease_after == float("inf") and pacing.retry == pacing.heartbeat
    assert not pacing.lease_due(now=100.0, releasing=False)
    assert pacing.lease_due(now=0.1, releasing=True)  # its own releases free hosts
    pacing.leased(now=0.0, asked=4, got=1, wait=0.7, busy=True)
    assert pacing.lease_after == pytest.approx(0.7)  # unless a host is ready by time


def test_an_empty_lease_comes_back_when_the_first_host_is_ready_if_sooner() -> None:
    pacing = Pacing(retry_min=0.02, retry_max=0.5)
    for _ in range(5):
        pacing.leased(now=0.0, asked=1, got=0, wait=None, busy=False)
    pacing.leased(now=10.0, asked=1, got=0, wait=0.005, busy=False)  # a delay's end
    assert pacing.lease_after == pytest.approx(10.005)
    pacing.leased(now=20.0, asked=1, got=0, wait=0.1, busy=True)
    assert pacing.lease_after == pytest.approx(20.1)


def test_messages_linger_for_company_unless_many_wait() -> None:
    pacing = Pacing(linger=0.03, full=64)
    assert not pacing.messages_due(now=1.01, waiting=3, since=1.0)
    assert pacing.messages_due(now=1.03, waiting=3, since=1.0)
    assert pacing.messages_due(now=1.0, waiting=64, since=1.0)
    assert not pacing.messages_due(now=5.0, waiting=0, since=None)


def test_heartbeat_and_status_ride_a_round_past_half_their_period() -> None:
    pacing = Pacing(heartbeat=2.0, status=3.0, last_heartbeat=0.0, last_status=0.0)
    assert not pacing.heartbeat_due(1.2, riding=False) and pacing.heartbeat_due(1.2, riding=True)
    assert not pacing.status_due(1.2, riding=True) and pacing.status_due(1.6, riding=True)
    assert pacing.heartbeat_due(2.0, riding=False) and pacing.status_due(3.0, riding=False)


def test_the_thread_sleeps_until_the_next_decision() -> None:
    pacing = Pacing(linger=0.03, heartbeat=2.0, status=3.0, last_heartbeat=0.0, last_status=0.0)
    assert pacing.pause(now=1.0, since=None, leasing=False, cap=5.0) == pytest.approx(1.0)
    assert pacing.pause(now=1.0, since=0.99, leasing=False, cap=5.0) == pytest.approx(0.02)
    assert pacing.pause(now=1.0, since=None, leasing=False, cap=0.05) == 0.05
    pacing.lease_after = 1.01
    assert pacing.pause(now=1.0, since=None, leasing=True, cap=5.0) == pytest.approx(0.01)


def test_a_push_waits_for_a_round_only_while_the_cluster_has_work_and_the_node_holds_some() -> None:
    pacing = Pacing(heartbeat=2.0)
    # nobody starves for it; a round comes within the patience (two heartbeat periods)
    assert pacing.hold("push", 0.0, queued=True, holding=True) == pacing.patience == 4.0
    assert pacing.hold("push", 0.0, queued=False, holding=True) == 0.0  # another node may
    assert pacing.hold("push", 0.0, queued=True, holding=False) == 0.0  # this one may
    assert pacing.hold("ack", 0.0, queued=False, holding=False) == 4.0
    assert pacing.hold("release", 0.25, queued=True, holding=True) == 0.25  # its own


def test_a_resting_node_beats_and_polls_at_its_rest_period_and_parks_that_long() -> None:
    pacing = Pacing(heartbeat=2.0, status=3.0, rest=7.5)
    pacing.last_heartbeat = pacing.last_status = 0.0
    assert pacing.heartbeat_due(now=2.0, riding=False) and pacing.status_due(3.0, False)
    assert pacing.park_for(now=0.5, cap=30.0) == pytest.approx(2.5)
    assert not pacing.parkable(stopping=False, busy=False, room_full=True)  # last lease full
    pacing.leased(now=0.0, asked=4, got=0, wait=None, busy=False)
    assert pacing.parkable(stopping=False, busy=False, room_full=True)
    assert not pacing.parkable(stopping=False, busy=True, room_full=True)  # holds some
    assert not pacing.parkable(stopping=True, busy=False, room_full=True)
    assert not pacing.parkable(stopping=False, busy=False, room_full=False)  # requests out
    pacing.resting = True  # parked, holding nothing, while other nodes hold the work
    assert not pacing.heartbeat_due(now=7.0, riding=False)
    assert not pacing.status_due(now=7.0, riding=False)
    assert pacing.heartbeat_due(now=7.5, riding=False) and pacing.status_due(7.5, False)
    assert pacing.park_for(now=0.5, cap=30.0) == pytest.approx(7.0)
    assert pacing.pause(now=0.5, since=None, leasing=False, cap=30.0) == pytest.approx(7.0)
    # A host ready by time still ends the wait then: nobody leaves a token for it.
    pacing.ready_at = 1.5
    assert pacing.park_for(now=0.5, cap=30.0) == pytest.approx(1.0)
    # A rest shorter than the periods never shortens them.
    short = Pacing(heartbeat=2.0, status=3.0, rest=1.0, resting=True)
    short.last_heartbeat = short.last_status = 0.0
    assert not short.heartbeat_due(now=1.5, riding=False) and not short.status_due(2.5, False)


def test_a_node_holding_leases_lets_its_heartbeat_ride_their_rounds() -> None:
    """A node keeping a host's turns makes a round at least once a heartbeat period
    plus a fetch and half a delay (the last kept turn's release): its heartbeat rides
    those past half its period, and makes a round of its own only after the patience."""
    pacing = Pacing(heartbeat=2.0, status=3.0, last_heartbeat=0.0, holding=True)
    assert pacing.heartbeat_due(1.0, riding=True)  # rides a round made anyway
    assert not pacing.heartbeat_due(3.9, riding=False)  # no round of its own yet
    assert pacing.heartbeat_due(4.0, riding=False)
    pacing.holding = False
    assert pacing.heartbeat_due(2.0, riding=False)
    # A short lease timeout bounds it: a live node's leases are never reclaimed.
    assert Pacing(heartbeat=2.0, rest=2.5).patience == 2.5  # FOCUS_CLUSTER_LEASE_TIMEOUT 5
    assert Pacing(heartbeat=2.0, rest=1.0).patience == 2.0
