"""The suite must not reach any host but 127.0.0.1: prove the guard is on."""

import socket

import pytest
from pytest_socket import SocketConnectBlockedError


def test_network_is_blocked() -> None:
    # pytest-socket refuses before any packet leaves; the address is a documentation range.
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("198.51.100.7", 80), timeout=1)


def test_loopback_is_allowed() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        client = socket.create_connection(server.getsockname(), timeout=1)
        client.close()
    finally:
        server.close()
