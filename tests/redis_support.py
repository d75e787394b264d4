"""Redis as operators run it, started by the tests on loopback TCP ports: Sentinel, TLS, Cluster.

- ``Node(directory, name, *args)``: one ``redis-server`` of the test's own on a free loopback port
  (``port``), its own directory, started with ``args`` (``--tls-port`` ones too: ``tls=True`` puts the
  port there); ``stop()`` ends it, ``client()`` talks to it;
- ``sentinel_group(directory, sentinels)``: a master, a replica of it and ``sentinels`` Sentinels
  watching it as ``mymaster``, every one of them answering;
- ``cluster(directory, masters)``: a Redis Cluster of ``masters`` masters, every slot served;
- ``tls_files(directory)``: a CA, a server certificate and a client certificate signed by it, and a
  CA that signed neither (``TlsFiles``), made with the ``cryptography`` package;
- ``stopped(nodes)``: stop every node, in any case.
"""

from __future__ import annotations

import contextlib
import datetime
import shutil
import socket
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from conftest import redis_server_program, require_service, wait_answering, wait_for

#: How long a Redis process, a Sentinel's view or a cluster may take to come up on a loaded machine.
STARTUP = 30.0
SERVICE = "mymaster"


def _free_port(bus: bool = False) -> int:
    """A loopback port free now (and, for a cluster node, its bus port 10000 above it too)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if not bus:
            return port
        if port + 10000 < 65536:
            with socket.socket() as bus_probe:
                try:
                    bus_probe.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
                return port


class Node:
    """One ``redis-server`` (or Sentinel, with ``--sentinel`` in ``args``) on a loopback port.

    A port picked free may be taken by another process before the server binds it: the server then
    exits at once, and ``start`` tries another. ``tls`` serves TLS only, on ``port`` (``ssl`` are the
    client options that reach it).
    """

    def __init__(self, directory: Path, name: str, *args: str, tls: bool = False, bus: bool = False,
                 config: str | None = None, ssl: dict[str, Any] | None = None) -> None:
        self.directory = directory / name
        self.directory.mkdir(parents=True, exist_ok=True)
        self.args = list(args)
        self.tls = tls
        self.bus = bus
        self.config = config
        self.ssl = ssl or {}
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def client(self, **options: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5, **{**self.ssl, **options})

    def start(self) -> Node:
        for _ in range(5):
            if self._started():
                return self
        raise AssertionError(f"redis-server in {self.directory} did not start: {self.log()}")

    def _started(self) -> bool:
        self.port = _free_port(self.bus)
        listening = ["--port", "0", "--tls-port", str(self.port)] if self.tls else ["--port", str(self.port)]
        command = [redis_server_program()]
        if self.config is not None:  # a Sentinel rewrites its configuration file: one of its own
            path = self.directory / "node.conf"
            path.write_text(self.config)
            command.append(str(path))
        log = self.directory / "log.txt"
        self.process = subprocess.Popen(
            [*command, *listening, "--bind", "127.0.0.1", "--dir", str(self.directory), "--save", "",
             "--appendonly", "no", "--logfile", str(log), *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_answering(self.process, self.client(), STARTUP,
                       f"redis-server did not answer within {STARTUP:.0f} s: {self.log()}")
        return self.process.poll() is None

    def log(self) -> str:
        path = self.directory / "log.txt"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


@contextlib.contextmanager
def stopped(nodes: list[Node]) -> Iterator[list[Node]]:
    """``nodes`` (filled in by the block as it starts them), every one stopped when the block ends."""
    try:
        yield nodes
    finally:
        for node in nodes:
            node.stop()


@dataclass
class SentinelGroup:
    master: Node
    replica: Node
    sentinels: list[Node]

    def url(self, scheme: str = "redis+sentinel", tail: str = "") -> str:
        hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)
        return f"{scheme}://{hosts}/{SERVICE}{tail}"


@contextlib.contextmanager
def sentinel_group(directory: Path, sentinels: int = 2) -> Iterator[SentinelGroup]:
    """A master, its replica and ``sentinels`` Sentinels agreeing (a quorum of one) on ``mymaster``:
    quick to notice a master gone (1 s) and to fail over."""
    with stopped([]) as nodes:
        master = Node(directory, "master").start()
        nodes.append(master)
        replica = Node(directory, "replica").start()
        nodes.append(replica)
        replica.client().replicaof("127.0.0.1", master.port)
        config = (f"sentinel monitor {SERVICE} 127.0.0.1 {master.port} 1\n"
                  f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                  f"sentinel failover-timeout {SERVICE} 5000\n"
                  "sentinel resolve-hostnames no\n")
        watching = [Node(directory, f"sentinel{n}", "--sentinel", config=config).start() for n in range(sentinels)]
        nodes.extend(watching)
        group = SentinelGroup(master, replica, watching)
        assert wait_for(lambda: _in_sync(replica), STARTUP), f"the replica did not sync: {replica.log()}"
        for sentinel in watching:
            assert wait_for(lambda: _knows(sentinel), STARTUP), f"a Sentinel did not see the group: {sentinel.log()}"
        yield group


def _in_sync(replica: Node) -> bool:
    with contextlib.closing(replica.client()) as client:
        return client.info("replication").get("master_link_status") == "up"


def _knows(sentinel: Node) -> bool:
    """Whether ``sentinel`` names the master and has found its replica."""
    with contextlib.closing(sentinel.client()) as client:
        try:
            return bool(client.sentinel_get_master_addr_by_name(SERVICE)) and bool(client.sentinel_slaves(SERVICE))
        except redis.RedisError:
            return False


@contextlib.contextmanager
def cluster(directory: Path, masters: int = 3, *args: str) -> Iterator[list[Node]]:
    """A Redis Cluster of ``masters`` masters (no replicas) made with ``redis-cli --cluster create``;
    yields once every slot is served and every node says the cluster is ok."""
    cli = require_service(shutil.which("redis-cli"), "redis-cli", "apt-get install redis-tools")
    with stopped([]) as nodes:
        for n in range(masters):
            nodes.append(Node(directory, f"node{n}", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                              "--cluster-node-timeout", "2000", *args, bus=True).start())
        created = subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{node.port}" for node in nodes), "--cluster-replicas", "0",
             "--cluster-yes"], capture_output=True, text=True, timeout=60)
        assert created.returncode == 0, created.stdout + created.stderr
        for node in nodes:
            assert wait_for(lambda: _cluster_ok(node), STARTUP), f"the cluster did not form: {node.log()}"
        yield nodes


def _cluster_ok(node: Node) -> bool:
    with contextlib.closing(node.client()) as client:
        info = client.execute_command("CLUSTER", "INFO")
        text = info.decode() if isinstance(info, bytes) else str(info)
        return "cluster_state:ok" in text and "cluster_slots_assigned:16384" in text


@dataclass
class TlsFiles:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # signed neither certificate

    def server_args(self) -> list[str]:
        return ["--tls-cert-file", str(self.server_cert), "--tls-key-file", str(self.server_key),
                "--tls-ca-cert-file", str(self.ca), "--tls-auth-clients", "yes"]

    def query(self, ca: Path | None = None, client: bool = True) -> str:
        """The ``rediss://`` URL's query naming the CA and, with ``client``, the client's certificate."""
        files = {"ssl_ca_certs": ca or self.ca}
        if client:
            files.update(ssl_certfile=self.client_cert, ssl_keyfile=self.client_key)
        return "&".join(f"{name}={path}" for name, path in files.items())


def tls_files(directory: Path) -> TlsFiles:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by it, and
    another CA; every key an EC P-256 one, valid from a day ago for a day."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        require_service(None, "cryptography", "pip install cryptography")
        raise
    import ipaddress

    now = datetime.datetime.now(datetime.timezone.utc)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def write(path: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> None:
        path.with_suffix(".key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def certificate(common: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
                    signer: ec.EllipticCurvePrivateKey, extensions: Sequence[tuple[Any, bool]]) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(name(common)).issuer_name(issuer)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical)
        return builder.sign(signer, hashes.SHA256())

    def authority(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Name]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(common, key, name(common), key, [(x509.BasicConstraints(ca=True, path_length=None), True)])
        write(directory / common, key, cert)
        return key, name(common)

    def leaf(common: str, signer: ec.EllipticCurvePrivateKey, issuer: x509.Name, usage: Any,
             extra: Sequence[tuple[Any, bool]] = ()) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        write(directory / common, key, certificate(common, key, issuer, signer, [
            (x509.BasicConstraints(ca=False, path_length=None), True), (x509.ExtendedKeyUsage([usage]), False),
            *extra]))

    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_name = authority("ca")
    authority("other-ca")
    leaf("server", ca_key, ca_name, ExtendedKeyUsageOID.SERVER_AUTH,
         [(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                        x509.DNSName("localhost")]), False)])
    leaf("client", ca_key, ca_name, ExtendedKeyUsageOID.CLIENT_AUTH)
    return TlsFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key",
                    directory / "client.crt", directory / "client.key", directory / "other-ca.crt")
