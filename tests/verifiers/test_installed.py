from __future__ import annotations

import httpx
import pytest

from referee.service.background import BackgroundServer
from referee.verifiers.base import Check, Verifier
from referee.verifiers.installed import InstalledVerifiers, UnknownVerifier, load_installed


def test_entry_point_plugin_is_discovered() -> None:
    installed = load_installed()
    assert "demo.reversed" in installed
    assert installed.kind("demo.reversed") == "plugin"
    assert installed.get("demo.reversed@2").score("cba", "abc").score == 1.0


def test_plugins_can_be_disabled() -> None:
    assert "demo.reversed" not in load_installed(plugins=False)


def test_plugin_is_served_over_http(server: BackgroundServer) -> None:
    verdict = httpx.post(
        f"{server.url}/v1/score",
        json={"verifier": "demo.reversed", "response": "olleh", "reference": "hello"},
    ).json()
    assert verdict == {**verdict, "score": 1.0, "status": "ok", "verifier": "demo.reversed@2"}


def test_explicit_registration_and_version_pinning() -> None:
    class Upper(Verifier):
        name = "upper"
        version = "3"

        def check(self, response: str, prepared: object, options: object) -> Check:
            return Check(float(response.isupper()))

    installed = InstalledVerifiers()
    installed.register(Upper)
    assert installed.get("upper@3").score("ABC", None).score == 1.0
    with pytest.raises(UnknownVerifier):
        installed.get("upper@2")
    with pytest.raises(ValueError, match="already registered"):
        installed.register(type("Other", (Upper,), {}))


def test_registration_rejects_non_verifiers() -> None:
    with pytest.raises(TypeError):
        InstalledVerifiers().register(object)  # type: ignore[arg-type]
