# SPDX-License-Identifier: Apache-2.0
"""Chart checks of neighborly-rebalancer (issue 26), registered by chart_test.py:
off by default, dry-run by default when enabled, RBAC of `get` on pods and
`create` on `pods/eviction` and nothing else, and its wiring to the
extender's operator port (scheme, CA, token) followed as the pod would."""


def register(t):
    check, render, name, container, expect, eq = t.check, t.render, t.name, t.container, t.expect, t.eq

    def rebalancer_objects(objs):
        return [d for d in objs.docs
                if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "rebalancer"]

    def grants_eviction(objs):
        return [f"{d['kind']}/{d['metadata']['name']}" for d in objs.of("ClusterRole") + objs.of("Role")
                for rule in d.get("rules", []) if "pods/eviction" in rule.get("resources", [])
                or "*" in rule.get("resources", [])]

    def flags(objs):
        c = container(objs.get("Deployment", name("rebalancer")), "rebalancer")
        eq(c["command"][0], "neighborly-rebalancer", "the rebalancer's command")
        return dict(a[2:].split("=", 1) for a in c["command"][1:])

    @check
    def rebalancer_off_by_default():
        for mode in ("second-scheduler", "extender-only"):
            objs = render(f"mode={mode}")
            expect(not rebalancer_objects(objs),
                   f"mode {mode}: rendered {[d['kind'] for d in rebalancer_objects(objs)]} without rebalancer.enabled")
            expect(not grants_eviction(objs), f"mode {mode}: {grants_eviction(objs)} grant pods/eviction by default")

    @check
    def rebalancer_rbac_is_get_pods_and_create_evictions_only():
        objs = render("rebalancer.enabled=true")
        role = objs.get("ClusterRole", name("rebalancer"))
        rules = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"])) for r in role["rules"])
        eq(rules, [(("",), ("pods",), ("get",)), (("",), ("pods/eviction",), ("create",))], "the rebalancer's rules")
        eq(grants_eviction(objs), [f"ClusterRole/{name('rebalancer')}"], "roles granting pods/eviction")
        binding = objs.get("ClusterRoleBinding", name("rebalancer"))
        eq(binding["roleRef"]["name"], name("rebalancer"), "the binding's role")
        eq(binding["subjects"], [{"kind": "ServiceAccount", "name": name("rebalancer"), "namespace": t.NAMESPACE}],
           "the binding's subjects")
        pod = objs.get("Deployment", name("rebalancer"))["spec"]["template"]["spec"]
        eq(pod["serviceAccountName"], name("rebalancer"), "the rebalancer pod's account")
        bound = [b["metadata"]["name"] for b in objs.of("ClusterRoleBinding") + objs.of("RoleBinding")
                 if any(s.get("name") == name("rebalancer") for s in b.get("subjects", []))]
        eq(bound, [name("rebalancer")], "bindings of the rebalancer's account")
        eq(objs.get("Deployment", name("rebalancer"))["spec"]["replicas"], 1, "replicas (one rate limit)")

    @check
    def rebalancer_dry_run_by_default():
        eq(flags(render("rebalancer.enabled=true"))["dry-run"], "true", "--dry-run when enabled")
        live = flags(render("rebalancer.enabled=true", "rebalancer.dryRun=false", "rebalancer.maxEvictions=2",
                            "rebalancer.evictionWindow=1h", "rebalancer.minPolls=5"))
        eq((live["dry-run"], live["max-evictions"], live["eviction-window"], live["min-polls"]),
           ("false", "2", "1h", "5"), "flags from the values")

    @check
    def rebalancer_reads_the_operator_port_with_a_token():
        for tls in ("true", "false"):
            objs = render("rebalancer.enabled=true", f"tls.scheduler={tls}")
            f = flags(objs)
            svc = objs.get("Service", name("extender"))
            port = next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "operator")
            scheme = "https" if tls == "true" else "http"
            eq(f["extender-url"], f"{scheme}://{name('extender')}.{t.NAMESPACE}.svc:{port}", "--extender-url")
            pod = objs.get("Deployment", name("rebalancer"))["spec"]["template"]["spec"]
            volumes = {v["name"]: v for v in pod["volumes"]}
            mounts = {m["mountPath"]: m["name"] for m in container(
                objs.get("Deployment", name("rebalancer")), "rebalancer")["volumeMounts"]}
            tokens = volumes[mounts["/etc/neighborly-operator"]]["secret"]
            eq(tokens["secretName"], name("operator-tokens"), "the token Secret")
            eq(f["token-file"], "/etc/neighborly-operator/tokens", "--token-file")
            expect(objs.has("Secret", name("operator-tokens")), "the token Secret is not rendered")
            if tls == "true":
                ca = volumes[mounts["/etc/neighborly-tls"]]["secret"]
                eq(ca["items"], [{"key": "ca.crt", "path": "ca.crt"}], "the TLS items mounted (the CA only, no key)")
                eq(f["ca-file"], "/etc/neighborly-tls/ca.crt", "--ca-file")
            else:
                expect("ca-file" not in f and "/etc/neighborly-tls" not in mounts, "plain HTTP with a CA mounted")
