# SPDX-License-Identifier: Apache-2.0
"""Chart checks of the operator side (issue 16), registered by chart_test.py.

Each check follows a path the way the cluster would and fails where a real
component would fail:
  - Prometheus: ServiceMonitor endpoint -> Service port -> container port ->
    the extender listener bound there -> does that listener ask for a client
    certificate, and does the scrape's scheme and CA match what it serves?
  - the kubelet: each probe's port -> listener, the same questions, and
    readiness on /readyz;
  - an operator following NOTES.txt: its port-forward, URLs and secret
    references against the rendered objects;
  - the version skew policy: kube-scheduler never newer than the cluster;
  - nodes without RDT: no agent pod waits for a host path its node lacks.
"""

import os
import re
import tempfile

import yaml


def register(t):
    """Adds the checks to chart_test's list; `t` is the chart_test module."""
    check, render, name, container, expect, eq = t.check, t.render, t.name, t.container, t.expect, t.eq
    render_notes = t.render_notes

    def render_kube(version, *sets):
        return render(*sets, kube_version=version)
    NAMESPACE = t.NAMESPACE

    def extender_config(objs):
        return yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])

    def flag_port(args, flag):
        for a in args:
            if a.startswith(flag + "="):
                return int(a.rsplit(":", 1)[1])
        return None

    def listeners(objs):
        """The extender's HTTP listeners by container port: what each serves and
        whether it is HTTPS and wants a client certificate (as the binary would
        read its config and flags)."""
        c = container(objs.get("Deployment", name("extender")), "extender")
        config = extender_config(objs)
        out = {}
        http_tls = config.get("http", {}).get("tls", {})
        out[flag_port(c["args"], "--http-address")] = {
            "what": "scheduler port", "https": bool(http_tls.get("certFile")),
            "client_cert": bool(http_tls.get("clientCaFile")), "api_token": False}
        op_port = flag_port(c["args"], "--operator-address")
        if op_port is not None:
            op_tls = config.get("operator", {}).get("tls", {})
            out[op_port] = {"what": "operator port", "https": bool(op_tls.get("certFile")),
                            "client_cert": False, "api_token": bool(config["operator"].get("tokenFile"))}
        return c, out

    def container_port(c, port):
        if isinstance(port, int):
            return port
        for p in c.get("ports", []):
            if p["name"] == port:
                return p["containerPort"]
        raise AssertionError(f"container {c['name']} has no port named {port}")

    def reachable_without_client_cert(listener, scheme, what):
        expect(listener is not None, f"{what}: no extender listener on that port")
        expect(not listener["client_cert"],
               f"{what}: the {listener['what']} wants a client certificate, which {what} does not have")
        want = "https" if listener["https"] else "http"
        eq(scheme.lower(), want, f"{what}: scheme against the {listener['what']}")

    TLS_VARIANTS = ([], ["tls.requireSchedulerClientCert=false"], ["tls.scheduler=false"],
                    ["tls.telemetry=false", "tls.scheduler=false"])

    @check
    def operator_port_probes_reach_readyz_without_client_cert():
        for sets in TLS_VARIANTS:
            objs = render(*sets)
            c, ports = listeners(objs)
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                get = c[probe].get("httpGet")
                expect(get is not None, f"{sets}: extender {probe} is not an HTTP check: {c[probe]}")
                eq(get["path"], path, f"{sets}: extender {probe} path")
                reachable_without_client_cert(ports.get(container_port(c, get["port"])),
                                              get.get("scheme", "HTTP"), f"{sets}: the kubelet's {probe}")

    @check
    def operator_port_scrapes_work_under_default_tls():
        for sets in TLS_VARIANTS:
            objs = render("metrics.serviceMonitor.enabled=true", *sets)
            c, ports = listeners(objs)
            svc = objs.get("Service", name("extender"))
            sm = objs.get("ServiceMonitor", name("extender"))
            expect(t.pod_labels_match(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]),
                   f"{sets}: the ServiceMonitor does not select the extender Service")
            endpoint = sm["spec"]["endpoints"][0]
            eq(endpoint["path"], "/metrics", "ServiceMonitor path")
            svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
            expect(endpoint["port"] in svc_ports, f"{sets}: Service has no port {endpoint['port']}")
            target = container_port(c, svc_ports[endpoint["port"]]["targetPort"])
            listener = ports.get(target)
            reachable_without_client_cert(listener, endpoint.get("scheme", "http"), f"{sets}: Prometheus")
            if listener["https"]:
                tls = endpoint.get("tlsConfig", {})
                ca = tls.get("ca", {}).get("secret", {})
                expect(ca, f"{sets}: HTTPS scrape without a CA (tlsConfig.ca.secret)")
                with tempfile.TemporaryDirectory() as tmp:
                    ca_file = t.secret_file(objs, ca["name"], ca["key"], tmp)
                    cert = t.secret_file(objs, name("tls-extender"), "tls.crt", tmp)
                    expect("OK" in t.openssl("verify", "-CAfile", ca_file, cert),
                           f"{sets}: the scrape's CA does not verify the extender's certificate")
                    sans = t.openssl("x509", "-in", cert, "-noout", "-ext", "subjectAltName")
                    expect(f"DNS:{tls.get('serverName')}" in sans,
                           f"{sets}: serverName {tls.get('serverName')} is not in the certificate: {sans}")
            ann = objs.get("Deployment", name("extender"))["spec"]["template"]["metadata"]["annotations"]
            ann_listener = ports.get(int(ann["prometheus.io/port"]))
            reachable_without_client_cert(ann_listener, ann.get("prometheus.io/scheme", "http"),
                                          f"{sets}: annotation-based scraping")
            pm = objs.get("PodMonitor", name("agent"))
            eq(pm["spec"]["podMetricsEndpoints"][0].get("scheme"), "http", "agent PodMonitor scheme")

    @check
    def operator_api_tokens_are_wired():
        objs = render()
        config = extender_config(objs)
        token_dir, token_key = os.path.split(config["operator"]["tokenFile"])
        mounts = t.mounts_of(objs.get("Deployment", name("extender")), "extender")
        secret = mounts[token_dir]["secret"]["secretName"]
        token = t.base64.b64decode(objs.get("Secret", secret)["data"][token_key]).decode().strip()
        expect(len(token) >= 16 and re.fullmatch(r"[A-Za-z0-9]+", token), f"generated token {token!r}")
        eq(sorted(objs.get("Secret", secret)["data"]), ["tokens"], "token Secret keys")
        objs = render("extender.operatorTokens.existingSecret=ops-tokens")
        expect(not objs.has("Secret", name("operator-tokens")), "existingSecret given, yet a token is generated")
        mounts = t.mounts_of(objs.get("Deployment", name("extender")), "extender")
        eq(mounts[token_dir]["secret"]["secretName"], "ops-tokens", "operator token Secret")

    @check
    def notes_commands_work_under_default_tls():
        for sets in ([], ["tls.scheduler=false"]):
            notes = render_notes(*sets)
            objs = render(*sets)
            c, ports = listeners(objs)
            svc_ports = {p["port"]: p for p in objs.get("Service", name("extender"))["spec"]["ports"]}
            forward = re.search(r"port-forward svc/(\S+) (\d+):(\d+)", notes)
            expect(forward, f"{sets}: NOTES.txt has no port-forward:\n{notes}")
            eq(forward.group(1), name("extender"), "port-forward Service")
            local, remote = int(forward.group(2)), int(forward.group(3))
            expect(remote in svc_ports, f"{sets}: port-forward to {remote}, not a port of the Service")
            listener = ports.get(container_port(c, svc_ports[remote]["targetPort"]))
            urls = re.findall(r"(https?)://(?:127\.0\.0\.1|localhost):(\d+)(\S*)", notes)
            expect(urls, f"{sets}: NOTES.txt has no URL")
            for scheme, port, _ in urls:
                eq(int(port), local, f"{sets}: URL port vs the port-forward")
                reachable_without_client_cert(listener, scheme, f"{sets}: NOTES.txt's {scheme}://...:{port}")
            for line in notes.splitlines():
                if "/v1/" in line or re.search(r"neighborlyctl .* nodes", line):
                    expect("--token-file" in line or "Authorization: Bearer" in line,
                           f"{sets}: an operator API call without the token: {line.strip()}")
                    if listener["https"]:
                        expect("--cacert" in line, f"{sets}: an HTTPS call without the CA: {line.strip()}")
            for secret, key in re.findall(r"get secret (\S+) -o jsonpath='\{\.data\.([^}]+)\}'", notes):
                key = key.replace("\\.", ".")
                expect(key in objs.get("Secret", secret)["data"], f"{sets}: Secret {secret} has no key {key}")

    # Kubernetes minor -> a kube-scheduler of that minor; newer tags refused.
    @check
    def scheduler_image_never_newer_than_the_cluster():
        # Every minor the chart accepts (Chart.yaml: >= 1.25) up to the newest pinned.
        with open(os.path.join(t.CHART, "values.yaml"), encoding="utf-8") as f:
            pinned = yaml.safe_load(f)["scheduler"]["image"].get("tagByMinor", {})
        with open(os.path.join(t.CHART, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for minor_number in range(25, 38):
            minor = f"1.{minor_number}"
            objs = render_kube(f"{minor}.3")
            image = container(objs.get("Deployment", name("scheduler")), "kube-scheduler")["image"]
            tag = image.rsplit(":", 1)[1]
            expect(re.fullmatch(rf"v{re.escape(minor)}\.\d+", tag),
                   f"Kubernetes {minor}.3 gets kube-scheduler {tag}: not of the cluster's minor")
            eq(pinned.get(minor), tag, f"scheduler.image.tagByMinor[{minor}]")
            expect(re.search(rf"\|\s*{re.escape(minor)}\s*\|\s*`{re.escape(tag)}`", readme),
                   f"the chart README's compatibility table lacks {minor} -> {tag}")
        eks = render_kube("1.28.3-eks-4f4795d")
        eq(container(eks.get("Deployment", name("scheduler")), "kube-scheduler")["image"],
           f"registry.k8s.io/kube-scheduler:{pinned['1.28']}", "a provider's version string")
        for kube, sets, fragment in (("1.40.1", [], "no kube-scheduler pinned for Kubernetes 1.40"),
                                     ("1.29.2", ["scheduler.image.tag=v1.30.1"], "newer than the cluster")):
            try:
                render_kube(kube, *sets)
            except t.RenderError as e:
                expect(fragment in str(e), f"Kubernetes {kube} {sets}: {e}")
                continue
            raise AssertionError(f"Kubernetes {kube} {sets} rendered; it must fail")
        objs = render_kube("1.29.2", "scheduler.image.tag=v1.28.4")
        eq(container(objs.get("Deployment", name("scheduler")), "kube-scheduler")["image"],
           "registry.k8s.io/kube-scheduler:v1.28.4", "an older pinned tag")

    def required_terms(ds):
        aff = ds["spec"]["template"]["spec"].get("affinity", {}).get("nodeAffinity", {})
        return aff.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])

    def node_matches(terms, labels):
        """Whether a node with `labels` satisfies required node affinity (In/NotIn/Exists/DoesNotExist)."""
        if not terms:
            return True
        def ok(e):
            present, value = e["key"] in labels, labels.get(e["key"])
            return {"In": present and value in e.get("values", []),
                    "NotIn": not present or value not in e.get("values", []),
                    "Exists": present, "DoesNotExist": not present}[e["operator"]]
        return any(all(ok(e) for e in term.get("matchExpressions", [])) for term in terms)

    @check
    def agents_run_on_nodes_without_rdt():
        objs = render()
        daemonsets = objs.of("DaemonSet")
        for ds in daemonsets:
            for v in ds["spec"]["template"]["spec"]["volumes"]:
                hp = v.get("hostPath")
                # Creating a missing directory is wrong under /sys (the kernel's to make);
                # the calibration cache under /var/lib is the agent's own.
                expect(not hp or hp.get("type") != "DirectoryOrCreate" or not hp["path"].startswith("/sys"),
                       f"{ds['metadata']['name']}: hostPath {hp and hp['path']} DirectoryOrCreate")
        with open(os.path.join(t.CHART, "values.yaml"), encoding="utf-8") as f:
            label = yaml.safe_load(f)["agent"].get("resctrlNodeLabel", "feature.node.kubernetes.io/cpu-rdt.RDTMON")
        for node, labels in (("a node with RDT", {label: "true"}), ("a node without RDT", {}),
                             ("a node labelled false", {label: "false"})):
            placed = [ds for ds in daemonsets if node_matches(required_terms(ds), labels)]
            eq(len(placed), 1, f"agent DaemonSets scheduled on {node}")
            ds = placed[0]
            vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
            resctrl = [v for v in vols.values() if v.get("hostPath", {}).get("path") == "/sys/fs/resctrl"]
            args = container(ds, "agent")["args"]
            if labels.get(label) == "true":
                expect(resctrl, f"{node}: {ds['metadata']['name']} mounts no resctrl")
                expect("--rdt-backend=resctrl" in args, f"{node}: args {args}")
            else:
                expect(not resctrl, f"{node}: {ds['metadata']['name']} would wait for /sys/fs/resctrl")
                expect("--rdt-backend=none" in args, f"{node}: args {args}")
        pm = render("metrics.serviceMonitor.enabled=true").get("PodMonitor", name("agent"))
        for ds in daemonsets:
            pod = ds["spec"]["template"]["metadata"]["labels"]
            sel = pm["spec"]["selector"]
            expect(t.pod_labels_match(sel.get("matchLabels", {}), pod) and
                   all(pod.get(e["key"]) in e["values"] for e in sel.get("matchExpressions", [])),
                   f"the PodMonitor does not select {ds['metadata']['name']}'s pods")
        for mode, count, resctrl in (("all", 1, True), ("none", 1, False)):
            objs = render(f"agent.resctrlNodes={mode}")
            eq(len(objs.of("DaemonSet")), count, f"agent DaemonSets with resctrlNodes={mode}")
            mounts = [m["mountPath"] for m in container(objs.of("DaemonSet")[0], "agent")["volumeMounts"]]
            eq("/host/sys/fs/resctrl" in mounts, resctrl, f"resctrl mounted with resctrlNodes={mode}")
        with open(os.path.join(t.CHART, "README.md"), encoding="utf-8") as f:
            expect("pod-security.kubernetes.io/enforce=privileged" in f.read(),
                   "the chart README does not document the agent namespace's PodSecurity level")

    @check
    def cert_manager_issues_the_mounted_secrets_stably():
        sets = ("tls.certManager.enabled=true", "metrics.serviceMonitor.enabled=true")
        objs = render(*sets, "extender.operatorTokens.existingSecret=ops-tokens")
        again = render(*sets, "extender.operatorTokens.existingSecret=ops-tokens")
        differ = [f"{a['kind']}/{a['metadata']['name']}" for a, b in zip(objs.docs, again.docs) if a != b]
        expect(not differ and len(objs.docs) == len(again.docs),
               f"two renders with cert-manager differ (GitOps needs them equal): {differ}")
        expect(not [s for s in objs.of("Secret") if s["type"] == "kubernetes.io/tls"],
               "cert-manager enabled, yet the chart generates TLS Secrets")
        certs = {c["spec"]["secretName"]: c for c in objs.of("Certificate")}
        issuers = {i["metadata"]["name"]: i for i in objs.of("Issuer")}
        for cert in certs.values():
            ref = cert["spec"]["issuerRef"]
            expect(ref["name"] in issuers, f"Certificate {cert['metadata']['name']}: no Issuer {ref['name']}")
        ca_issuer = issuers[t.name("tls-ca")]["spec"]["ca"]["secretName"]
        expect(certs[ca_issuer]["spec"].get("isCA") is True, "the CA Issuer's Secret is not a CA Certificate")
        for kind, workload, cname in (("Deployment", "extender", "extender"), ("DaemonSet", "agent", "agent"),
                                      ("Deployment", "scheduler", "kube-scheduler")):
            secret = t.mounts_of(objs.get(kind, name(workload)), cname)["/etc/neighborly-tls"]["secret"]["secretName"]
            expect(secret in certs, f"{workload} mounts {secret}, which no Certificate issues")
            usages = certs[secret]["spec"]["usages"]
            eq(usages, ["server auth"] if workload == "extender" else ["client auth"], f"{workload} usages")
        dns = certs[name("tls-extender")]["spec"]["dnsNames"]
        for needed in (f"{name('extender')}.{NAMESPACE}.svc", f"{name('extender-agents')}.{NAMESPACE}.svc",
                       "localhost"):
            expect(needed in dns, f"the extender Certificate lacks {needed}")
        sm_ca = objs.get("ServiceMonitor", name("extender"))["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]
        expect(sm_ca["name"] in certs and sm_ca["key"] == "ca.crt", f"ServiceMonitor CA {sm_ca}")
        objs = render("tls.certManager.enabled=true", "tls.certManager.issuerRef.name=corp-ca",
                      "tls.certManager.issuerRef.kind=ClusterIssuer")
        expect(not objs.of("Issuer"), "an issuerRef given, yet the chart renders its own Issuers")
        for cert in objs.of("Certificate"):
            eq(cert["spec"]["issuerRef"], {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
               f"{cert['metadata']['name']} issuerRef")
