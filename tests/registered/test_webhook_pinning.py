"""DNS rebinding: a webhook's host is resolved at each call, every address checked, and the
connection pinned to the address that was checked (issue 14, security notes)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from referee.registered.webhook import WebhookRuntime, address_allowed, build_class, parse_networks
from referee.verifiers import Check, Resources, VerifierError
from tests.registered.conftest import WEBHOOK_SECRET, Webhook, registered_settings
from tests.registered.test_webhook import REF


class RebindingDNS:
    """Answers each lookup of a name with the next entry of its script (the last repeats)."""

    def __init__(self, script: dict[str, Sequence[list[str]]]) -> None:
        self.script = script
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        answers = self.script[host]
        n = sum(1 for h in self.lookups if h == host)
        self.lookups.append(host)
        return list(answers[min(n, len(answers) - 1)])


async def _judge(runtime: WebhookRuntime, url: str, response: str = "red green") -> Check | VerifierError:
    cls = build_class("hook.pin", "1", {"url": url, "retries": 0}, WEBHOOK_SECRET, None, runtime)
    verifier = cls()
    options = cls.validate_options({})
    prepared = verifier.prepare(cls.validate_reference(REF), options)
    (result,) = await verifier.check_group([response], prepared, options, Resources())
    return result


def _runtime(tmp_path: Path, dns: RebindingDNS, **settings: Any) -> WebhookRuntime:
    base: dict[str, Any] = {"webhook_allowed_hosts": ["hook.test"], "webhook_allowed_networks": []}
    base.update(settings)
    return WebhookRuntime(registered_settings(tmp_path / "db.sqlite", **base).registry, resolver=dns)


async def test_private_addresses_are_refused_unless_allowed(webhook: Webhook, tmp_path: Path) -> None:
    port = webhook.server.server_address[1]
    dns = RebindingDNS({"hook.test": [["127.0.0.1"]]})
    runtime = _runtime(tmp_path, dns)
    hits = webhook.hits["/grade"]
    result = await _judge(runtime, f"http://hook.test:{port}/grade")
    assert isinstance(result, VerifierError) and "not a public address" in str(result)
    assert webhook.hits["/grade"] == hits  # never called
    await runtime.aclose()
    # Allowed explicitly: the call goes to the checked address, under the name it was given.
    runtime = _runtime(tmp_path, dns, webhook_allowed_networks=["127.0.0.0/8"])
    result = await _judge(runtime, f"http://hook.test:{port}/grade")
    assert isinstance(result, Check) and result.score == 1.0
    assert webhook.hits["/grade"] == hits + 1
    await runtime.aclose()


async def test_a_rebinding_answer_is_refused_at_the_call(webhook: Webhook, tmp_path: Path) -> None:
    port = webhook.server.server_address[1]
    # First lookup public, later ones loopback; a mixed answer is refused whole.
    dns = RebindingDNS({"hook.test": [["127.0.0.1"], ["169.254.169.254"], ["8.8.8.8", "10.0.0.5"]]})
    runtime = _runtime(tmp_path, dns, webhook_allowed_networks=["127.0.0.1/32"])
    assert isinstance(await _judge(runtime, f"http://hook.test:{port}/grade"), Check)
    for _ in range(2):  # metadata address, then a mix with a private one
        result = await _judge(runtime, f"http://hook.test:{port}/grade")
        assert isinstance(result, VerifierError) and "not a public address" in str(result)
    assert dns.lookups == ["hook.test"] * 3  # resolved at every call
    await runtime.aclose()


async def test_the_connection_uses_the_checked_address(webhook: Webhook, tmp_path: Path) -> None:
    """The name is never resolved again by the HTTP client: a name only our resolver knows
    still reaches the server, with its own name in the Host header."""
    port = webhook.server.server_address[1]
    dns = RebindingDNS({"hook.test": [["127.0.0.1"]]})
    runtime = _runtime(tmp_path, dns, webhook_allowed_networks=["127.0.0.0/8"])
    seen: list[str] = []
    original = runtime.client.send

    async def spy(request: Any, **kwargs: Any) -> Any:
        seen.append(f"{request.url.host} {request.headers['host']}")
        return await original(request, **kwargs)

    runtime.client.send = spy  # type: ignore[method-assign]
    assert isinstance(await _judge(runtime, f"http://hook.test:{port}/grade"), Check)
    assert seen == [f"127.0.0.1 hook.test:{port}"]
    await runtime.aclose()


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:8.8.8.8", True),
    ],
)
def test_which_addresses_are_public(address: str, allowed: bool) -> None:
    assert address_allowed(ipaddress.ip_address(address), []) is allowed


def test_allowed_networks() -> None:
    networks = parse_networks(["10.0.0.0/8", " fd00::/8 "])
    assert address_allowed(ipaddress.ip_address("10.9.9.9"), networks)
    assert address_allowed(ipaddress.ip_address("fd00::5"), networks)
    assert not address_allowed(ipaddress.ip_address("192.168.0.1"), networks)
    with pytest.raises(ValueError, match="REFEREE_WEBHOOK_ALLOWED_NETWORKS"):
        parse_networks(["not-a-network"])
