# SPDX-License-Identifier: Apache-2.0
"""Chart checks of the framework-plugin mode (scheduler.integration: plugin,
issue 13), registered by chart_test.py.

They follow the plugin's call the way the cluster would: the rendered
pluginConfig is decoded as neighborly-scheduler decodes it (its field names
are read from scheduler/plugin/args.go, so a renamed field fails here), its
address goes through the extender Service to a container port and to the
placement listener the extender's config opens, and each TLS file is in the
Secret the other side trusts.
"""

import os
import re

import yaml

# The chart's plugin mode needs a cluster neighborly-scheduler supports.
KUBE_VERSION = "1.36.3"


def register(t):
    check, name, container, expect, eq = t.check, t.name, t.container, t.expect, t.eq
    NAMESPACE = t.NAMESPACE

    def render(*sets, kube_version=KUBE_VERSION):
        return t.render(*sets, kube_version=kube_version)

    def plugin_args_fields():
        """The JSON field names neighborly-scheduler's Args accepts (strict decoding)."""
        with open(os.path.join(t.ROOT, "scheduler", "plugin", "args.go"), encoding="utf-8") as f:
            src = f.read()
        body = re.search(r"type Args struct \{(.*?)\n\}", src, re.S).group(1)
        return set(re.findall(r'json:"([A-Za-z]+)', body))

    def neighborly_profile(objs):
        cfg = t.scheduler_config(objs)
        eq(len(cfg["profiles"]), 1, "profiles")
        return cfg, cfg["profiles"][0]

    def plugin_args(profile):
        entries = [e for e in profile.get("pluginConfig", []) if e["name"] == "Neighborly"]
        eq(len(entries), 1, "Neighborly pluginConfig entries")
        return entries[0]["args"]

    @check
    def plugin_mode_profile():
        values = yaml.safe_load(open(os.path.join(t.CHART, "values.yaml"), encoding="utf-8"))
        objs = render("scheduler.integration=plugin")
        cfg, profile = neighborly_profile(objs)
        expect("extenders" not in cfg, "plugin mode must not also call the HTTP extender")
        enabled = profile["plugins"]["multiPoint"]["enabled"]
        eq([e["name"] for e in enabled], ["Neighborly"], "enabled plugins")
        eq(enabled[0]["weight"], values["schedulerExtender"]["weight"], "the plugin's weight (the extender mode's)")
        # Named at filter as well: kube-scheduler then runs its Filter before
        # the default filters (explicit extension-point entries come first).
        eq([e["name"] for e in profile["plugins"]["filter"]["enabled"]], ["Neighborly"], "filter plugins named first")
        args = plugin_args(profile)
        unknown = set(args) - plugin_args_fields()
        expect(not unknown, f"pluginConfig args neighborly-scheduler refuses (strict): {sorted(unknown)}")
        for key in ("filterTimeout", "scoreTimeout", "reserveTimeout"):
            expect(0 < t.duration_seconds(args[key]) <= 1, f"{key} {args[key]} is not well under 1s")
        expect(args["failOpen"] is True, "failOpen must default to true, like ignorable")
        eq(args["bookingLinger"], values["scheduler"]["plugin"]["bookingLinger"], "bookingLinger")
        expect(0 <= t.duration_seconds(args["bookingLinger"]) <= 1, f"bookingLinger {args['bookingLinger']} outside [0, 1s]")
        dep = objs.get("Deployment", name("scheduler"))
        c = container(dep, "kube-scheduler")
        eq(c["command"][0], "neighborly-scheduler", "scheduler command")
        eq(c["image"], "ghcr.io/neighborly/neighborly-scheduler:" + t.chart_app_version(), "scheduler image")
        # Extender mode is untouched by the plugin's values.
        cfg, profile = neighborly_profile(render())
        expect("plugins" not in profile and len(cfg["extenders"]) == 1, "extender mode changed")
        ext_cfg = yaml.safe_load(render().get("ConfigMap", name("extender"))["data"]["extender.yaml"])
        expect("placement" not in ext_cfg, "the placement port is opened only for the plugin mode")

    @check
    def plugin_address_reaches_the_placement_listener():
        objs = render("scheduler.integration=plugin")
        args = plugin_args(neighborly_profile(objs)[1])
        host, port = args["address"].rsplit(":", 1)
        eq(host, f"{name('extender')}.{NAMESPACE}.svc", "plugin address host (the extender Service)")
        svc = objs.get("Service", name("extender"))
        ports = [p for p in svc["spec"]["ports"] if p["port"] == int(port)]
        eq(len(ports), 1, f"extender Service ports matching {port}")
        target = ports[0].get("targetPort", ports[0]["port"])
        c = container(objs.get("Deployment", name("extender")), "extender")
        cports = {p["name"]: p["containerPort"] for p in c["ports"]}
        container_port = cports[target] if isinstance(target, str) else target
        config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
        placement = config["placement"]
        eq(int(placement["address"].rsplit(":", 1)[1]), container_port,
           "the placement listener's port vs the Service's target")

    @check
    def plugin_books_on_every_replica():
        objs = render("scheduler.integration=plugin")
        args = plugin_args(neighborly_profile(objs)[1])
        host, port = args["peersAddress"].rsplit(":", 1)
        eq(host, f"{name('extender-agents')}.{NAMESPACE}.svc",
           "peersAddress host (the headless Service, one address per replica)")
        eq(port, args["address"].rsplit(":", 1)[1], "peersAddress port (the placement port)")
        svc = objs.get("Service", name("extender-agents"))
        eq(svc["spec"]["clusterIP"], "None", "the peers' Service is headless")

    @check
    def plugin_tls_is_mutual_and_wired():
        objs = render("scheduler.integration=plugin")
        args = plugin_args(neighborly_profile(objs)[1])
        expect(not args.get("insecure"), "plaintext plugin calls under the default TLS")
        sched_mounts = t.mounts_of(objs.get("Deployment", name("scheduler")), "kube-scheduler")
        for key in ("caFile", "certFile", "keyFile"):
            t.under_secret(sched_mounts, args[key], name("tls-scheduler"), f"plugin args.{key}")
        config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
        ext_mounts = t.mounts_of(objs.get("Deployment", name("extender")), "extender")
        ptls = config["placement"]["tls"]
        for key in ("caFile", "certFile", "keyFile"):
            t.under_secret(ext_mounts, ptls[key], name("tls-extender"), f"extender placement.tls.{key}")
        expect("insecurePlaintext" not in config["placement"], "placement TLS and plaintext at once")
        # Without scheduler TLS both sides agree on plaintext.
        objs = render("scheduler.integration=plugin", "tls.scheduler=false")
        args = plugin_args(neighborly_profile(objs)[1])
        expect(args.get("insecure") is True and not any(k in args for k in ("caFile", "certFile", "keyFile")),
               f"tls.scheduler=false: plugin args {args}")
        config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
        expect(config["placement"].get("insecurePlaintext") is True, "tls.scheduler=false: extender placement")
        # A placement port that takes clients without certificates is refused.
        try:
            render("scheduler.integration=plugin", "tls.requireSchedulerClientCert=false")
        except t.RenderError as e:
            expect("requireSchedulerClientCert" in str(e), f"unclear failure: {e}")
        else:
            raise AssertionError("plugin mode rendered with tls.requireSchedulerClientCert=false")

    @check
    def plugin_mode_refuses_unsupported_clusters():
        for version in ("1.31.0", "1.35.4"):
            try:
                render("scheduler.integration=plugin", kube_version=version)
            except t.RenderError as e:
                expect("neighborly-scheduler supports Kubernetes 1.36, 1.37" in str(e), f"unclear failure: {e}")
            else:
                raise AssertionError(f"plugin mode rendered for Kubernetes {version}")
        render("scheduler.integration=plugin", kube_version="1.37.2")
        try:
            render("scheduler.integration=sidecar")
        except t.RenderError as e:
            expect("integration" in str(e), f"unclear schema failure: {e}")
        else:
            raise AssertionError("scheduler.integration=sidecar rendered")
