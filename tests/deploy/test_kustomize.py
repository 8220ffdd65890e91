"""deploy/kustomize rendered with `kubectl kustomize`: ports, probes, env, args and labels."""

from __future__ import annotations

import importlib

import pytest
from ruamel.yaml import YAML

from gazette_core.broker.journalspace.pushdown import push_down
from gazette_core.broker.journalspace.yaml_io import load_tree
from gazette_core.broker.stores import s3
from gazette_core.broker.stores.url import check_params, parse_store_url
from tests.deploy.manifests import (
    BASES,
    KUSTOMIZE,
    OVERLAYS,
    REPO,
    Obj,
    base,
    config_map_files,
    container,
    container_port,
    one,
    overlay,
)

WORKLOADS = {"Deployment", "StatefulSet", "Job"}
EXAMPLE = REPO / "examples" / "stream_sum"


def _env(c: Obj) -> dict[str, object]:
    """Each variable's literal value, or the downward-API field it comes from."""
    return {v["name"]: v["valueFrom"]["fieldRef"]["fieldPath"] if "valueFrom" in v
            else v.get("value") for v in c.get("env", [])}


def _script(c: Obj) -> list[str]:
    """The lines of a container's `/bin/sh -ec SCRIPT` command, continuations joined and
    blanks squeezed."""
    shell, flags, script = c["command"]
    assert (shell, flags, c.get("args")) == ("/bin/sh", "-ec", None)
    return [" ".join(line.split()) for line in script.replace("\\\n", " ").splitlines()]


def _served_on_8080(workload: Obj, c: Obj) -> None:
    """One port, 8080, named http: probed at /debug/ready and scraped at /debug/metrics."""
    assert c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    probe = c["readinessProbe"]["httpGet"]
    assert (probe["path"], container_port(c, probe["port"])) == ("/debug/ready", 8080)
    assert workload["spec"]["template"]["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true", "prometheus.io/port": "8080",
        "prometheus.io/path": "/debug/metrics"}
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"


@pytest.mark.parametrize("name", BASES)
def test_every_base_renders(name: str) -> None:
    objs = base(name)

    assert objs and all(o["apiVersion"] and o["metadata"]["name"] for o in objs)


@pytest.mark.parametrize("name", OVERLAYS)
def test_every_test_overlay_renders(name: str) -> None:
    objs = overlay(name)

    assert objs and all(o["apiVersion"] and o["metadata"]["name"] for o in objs)


def test_the_broker_serves_gazette_on_8080_with_its_settings_from_the_environment() -> None:
    objs = base("broker")
    deployment = one(objs, "Deployment", "gazette")
    c = container(deployment, "gazette")

    _served_on_8080(deployment, c)
    assert "exec gazette serve --broker.port 8080 --broker.zone \"$zone\"" in _script(c)
    assert _env(c) == {
        "BROKER_HOST": "status.podIP", "BROKER_ID": "metadata.name",
        "ETCD_ADDRESS": "http://etcd:2379",
        "ETCD_PREFIX_APP_INSTANCE": "metadata.labels['app.kubernetes.io/instance']",
        "ETCD_PREFIX": "/gazette/cluster/$(ETCD_PREFIX_APP_INSTANCE)",
        "LOG_FORMAT": "json", "LOG_LEVEL": "info", "NODE_NAME": "spec.nodeName"}
    service = one(objs, "Service", "gazette")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}]


def test_the_consumer_base_runs_the_app_on_8080_with_its_settings_from_the_environment(
        ) -> None:
    objs = base("consumer")
    deployment = one(objs, "Deployment", "consumer")
    c = container(deployment, "consumer")

    _served_on_8080(deployment, c)
    assert ("exec gazette consumer --app \"$CONSUMER_APP\" --consumer.port 8080 "
            "--consumer.zone \"$zone\" $CONSUMER_APP_ARGS") in _script(c)
    env = _env(c)
    assert {k: env[k] for k in ("CONSUMER_HOST", "CONSUMER_ID", "BROKER_ADDRESS",
                                "ETCD_ADDRESS", "LOG_FORMAT", "LOG_LEVEL")} == {
        "CONSUMER_HOST": "status.podIP", "CONSUMER_ID": "metadata.name",
        "BROKER_ADDRESS": "http://gazette:8080", "ETCD_ADDRESS": "http://etcd:2379",
        "LOG_FORMAT": "json", "LOG_LEVEL": "info"}
    assert env["ETCD_PREFIX"] == (
        "/gazette/consumers/$(ETCD_PREFIX_APP_NAME)-$(ETCD_PREFIX_APP_INSTANCE)")
    assert one(objs, "Service", "consumer")["spec"]["ports"][0]["port"] == 8080


def test_etcd_is_one_member_behind_the_service_brokers_and_consumers_name() -> None:
    objs = base("etcd")
    statefulset = one(objs, "StatefulSet", "etcd")
    c = container(statefulset, "etcd")

    assert (statefulset["spec"]["replicas"], statefulset["spec"]["serviceName"]) == (1, "etcd")
    assert "--advertise-client-urls=http://etcd:2379" in c["command"]
    probe = c["readinessProbe"]["httpGet"]
    assert (probe["path"], container_port(c, probe["port"])) == ("/health", 2379)
    (port,) = one(objs, "Service", "etcd")["spec"]["ports"]
    assert (port["port"], container_port(c, port["targetPort"])) == (2379, 2379)


def test_the_stream_sum_base_runs_the_summer_with_the_examples_shards() -> None:
    objs = base("example-stream-sum")
    deployment = one(objs, "Deployment", "consumer-stream-sum")
    env = _env(container(deployment, "consumer"))

    module, attr = str(env["CONSUMER_APP"]).split(":")
    assert (module, attr) == ("examples.stream_sum", "Summer")
    assert hasattr(importlib.import_module(module), attr)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels == {"app.kubernetes.io/name": "summer"}
    assert one(objs, "Service", "consumer-stream-sum")["spec"]["selector"] == labels
    (specs,) = [o for o in objs if o["kind"] == "ConfigMap"]
    assert specs["data"] == {"shards.yaml": (EXAMPLE / "shards.yaml").read_text()}
    job = one(objs, "Job", "apply-shards-stream-sum")
    assert _env(container(job, "apply-shards"))["CONSUMER_ADDRESS"] == (
        "http://consumer-stream-sum:8080")
    (volume,) = job["spec"]["template"]["spec"]["volumes"]
    assert volume["configMap"]["name"] == specs["metadata"]["name"]


@pytest.mark.parametrize("name", OVERLAYS)
def test_selectors_match_their_pods_and_only_them(name: str) -> None:
    objs = overlay(name)
    pods = {(o["kind"], o["metadata"]["name"]): o["spec"]["template"]["metadata"]["labels"]
            for o in objs if o["kind"] in WORKLOADS}

    for o in objs:
        if o["kind"] in {"Deployment", "StatefulSet"}:
            selector = o["spec"]["selector"]["matchLabels"]
            assert selector.items() <= pods[(o["kind"], o["metadata"]["name"])].items()
    for service in (o for o in objs if o["kind"] == "Service"):
        selector = service["spec"]["selector"]
        chosen = [key for key, labels in pods.items() if selector.items() <= labels.items()]
        # One workload each, never a Job's pod (a Job would join the Service's endpoints).
        assert len(chosen) == 1 and chosen[0][0] != "Job", (service["metadata"]["name"], chosen)


@pytest.mark.parametrize("name", OVERLAYS)
def test_every_mounted_config_map_and_secret_is_rendered_or_optional(name: str) -> None:
    objs = overlay(name)
    present = {(o["kind"], o["metadata"]["name"]) for o in objs}

    for workload in (o for o in objs if o["kind"] in WORKLOADS):
        for volume in workload["spec"]["template"]["spec"].get("volumes", []):
            for kind, key, ref in (("ConfigMap", "configMap", "name"),
                                   ("Secret", "secret", "secretName")):
                if key in volume and not volume[key].get("optional"):
                    assert (kind, volume[key][ref]) in present, (workload["metadata"], volume)


def test_the_stream_sum_deployment_is_one_namespace_and_one_instance() -> None:
    objs = overlay("deploy-stream-sum")

    assert one(objs, "Namespace", "stream-sum")
    for o in objs:
        if o["kind"] != "Namespace":
            assert o["metadata"]["namespace"] == "stream-sum", o["metadata"]
        assert o["metadata"]["labels"]["app.kubernetes.io/instance"] == "stream-sum"
    # The environment's brokers and zone map are the ones the consumers' base expects.
    assert {("Service", "gazette"), ("Service", "etcd"), ("ConfigMap", "gazette-zonemap"),
            ("Secret", "gazette-aws-credentials")} <= {
        (o["kind"], o["metadata"]["name"]) for o in objs}


def test_the_environments_journals_are_the_examples_in_its_minio_bucket() -> None:
    specs = config_map_files(overlay("environment"), "journal-specs")["journals.yaml"]
    ours = push_down(load_tree(specs))
    theirs = push_down(load_tree((EXAMPLE / "journals.yaml").read_text()))

    (store,) = {s for leaf in ours for s in leaf.spec.fragment.stores}
    for leaf in theirs:
        del leaf.spec.fragment.stores[:]
        leaf.spec.fragment.stores.append(store)
    assert [(leaf.spec, leaf.revision) for leaf in ours] == [
        (leaf.spec, leaf.revision) for leaf in theirs]
    url = parse_store_url(store)
    check_params(url, s3.PARAMS)
    assert (url.host, url.params) == ("examples", {"profile": "minio",
                                                   "endpoint": "http://minio:9000"})
    env = KUSTOMIZE / "test" / "environment"
    assert "[minio]" in (env / "aws_credentials").read_text().splitlines()
    assert "[profile minio]" in (env / "aws_config").read_text().splitlines()
    assert one(overlay("environment"), "Service", "minio")["spec"]["ports"][0]["port"] == 9000


def test_the_zone_map_is_a_script_the_deployments_find_in_their_home() -> None:
    objs = overlay("deploy-stream-sum")
    zonemap = config_map_files(objs, "gazette-zonemap")

    assert list(zonemap) == ["node-zone.sh"]
    for name, cname in (("gazette", "gazette"), ("consumer-stream-sum", "consumer")):
        c = container(one(objs, "Deployment", name), cname)
        (mount,) = [m for m in c["volumeMounts"] if m["name"] == "zonemap"]
        assert mount["mountPath"] == "/home/gazette/.config/zonemap"
        assert 'zone=$(sh "$HOME/.config/zonemap/node-zone.sh" "$NODE_NAME")' in _script(c)


def test_kustomizations_keep_to_what_old_kustomize_takes() -> None:
    # kubectl 1.20's kustomize (Debian's kubernetes-client) takes directories only under
    # `bases`, and knows none of the newer fields.
    old = {"bases", "resources", "patchesStrategicMerge", "nameSuffix", "namePrefix",
           "namespace", "commonLabels", "configMapGenerator", "secretGenerator",
           "generatorOptions", "images"}
    for path in sorted(KUSTOMIZE.rglob("kustomization.yaml")):
        doc = YAML(typ="safe").load(path.read_text())
        assert set(doc) <= old, (path, set(doc) - old)
        for resource in doc.get("resources", []):
            assert (path.parent / resource).is_file(), (path, resource)
