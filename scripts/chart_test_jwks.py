# SPDX-License-Identifier: Apache-2.0
"""Chart checks of extender.identity.jwksSync (issue 16, point 8), registered
by chart_test.py.

They follow the keys the way the cluster would: the extender's config names
a JWKS file, the file's directory is a volume of a ConfigMap, and the sync
pods must write exactly that ConfigMap and key, with an account that may do
that and nothing else. The sync script itself is run with bash against a
fake kubectl (a script on PATH that answers like the API server and records
the patch), so its JSON escaping and its refusals are exercised, not read.
"""

import json
import os
import re
import stat
import subprocess
import tempfile

import yaml

ISSUER = "https://kubernetes.default.svc.cluster.local"
SYNC = ["extender.identity.issuer=" + ISSUER, "extender.identity.jwksSync.enabled=true"]
JWKS = '{"keys":[{"use":"sig","kty":"RSA","kid":"k1","alg":"RS256","n":"AQAB","e":"AQAB"}]}'

# A kubectl that answers `get --raw /openid/v1/jwks` with $FAKE_JWKS (a file),
# `get configmap` with $FAKE_CURRENT, and records a `patch`'s arguments.
FAKE_KUBECTL = r"""#!/bin/bash
echo "$*" >> "${FAKE_DIR}/calls"
case "$1 $2" in
  "get --raw") [[ "$3" == /openid/v1/jwks ]] || exit 3; cat "${FAKE_DIR}/jwks" ;;
  "get configmap") cat "${FAKE_DIR}/current" ;;
  "patch configmap") printf '%s\n' "$@" > "${FAKE_DIR}/patch" ;;
  *) echo "fake kubectl: unexpected $*" >&2; exit 2 ;;
esac
"""


def register(t):
    check, render, name, container, expect, eq = t.check, t.render, t.name, t.container, t.expect, t.eq
    NAMESPACE = t.NAMESPACE

    def sync_objects(objs):
        return [d for d in objs.docs
                if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "jwks-sync"]

    def sync_pods(objs, release=t.RELEASE):
        job = [d for d in objs.of("Job") if d["metadata"]["name"].startswith(name("jwks-sync", release))]
        eq(len(job), 1, "sync Jobs")
        eq(job[0]["metadata"]["name"], name("jwks-sync", release) + "-r1",
           "the Job is named after the release revision (a Job's pod template cannot change)")
        cron = objs.get("CronJob", name("jwks-sync", release))
        return {"Job": job[0]["spec"]["template"], "CronJob": cron["spec"]["jobTemplate"]["spec"]["template"]}

    def extender_jwks(objs):
        """(ConfigMap name, key) of the JWKS file the extender's config reads."""
        config = yaml.safe_load(objs.get("ConfigMap", name("extender"))["data"]["extender.yaml"])
        directory, key = os.path.split(config["grpc"]["identity"]["jwksFile"])
        volume = t.mounts_of(objs.get("Deployment", name("extender")), "extender")[directory]
        items = volume["configMap"].get("items")
        if items is not None:
            expect({"key": key, "path": key} in items, f"the identity volume's items {items} lack {key}")
        return volume["configMap"]["name"], key

    def script_env(pod):
        c = container({"spec": {"template": pod}}, "jwks-sync")
        eq(c["command"], ["/bin/bash", "-c"], "sync command")
        return c["args"][0], {e["name"]: e["value"] for e in c["env"]}

    @check
    def jwks_sync_rendered_only_when_enabled():
        for sets in ([], ["extender.identity.issuer=" + ISSUER, "json:extender.identity.jwks=" + json.dumps(JWKS)]):
            objs = render(*sets)
            eq(sync_objects(objs), [], f"jwks-sync objects with --set {sets}")
            expect(not objs.of("CronJob") and not objs.of("Job"), f"a Job or CronJob with --set {sets}")
        # Disabled: the identity ConfigMap carries the value, mounted whole as before.
        cm, key = extender_jwks(objs)
        eq(objs.get("ConfigMap", cm)["data"], {key: JWKS}, "identity ConfigMap data without sync")
        volumes = objs.get("Deployment", name("extender"))["spec"]["template"]["spec"]["volumes"]
        expect("items" not in [v for v in volumes if v["name"] == "identity"][0]["configMap"],
               "without sync the identity volume is unchanged")
        objs = render(*SYNC)
        kinds = sorted(d["kind"] for d in sync_objects(objs))
        eq(kinds, ["ClusterRoleBinding", "CronJob", "Job", "Role", "RoleBinding", "ServiceAccount"],
           "jwks-sync objects")
        cron = objs.get("CronJob", name("jwks-sync"))
        eq(cron["spec"]["jobTemplate"]["metadata"]["labels"].get("app.kubernetes.io/component"), "jwks-sync",
           "the CronJob's Jobs carry the component label (kubectl get jobs -l ...)")
        # With sync and no cluster to look up (helm template), no data: the
        # kubelet holds the extender until the Job wrote the key.
        cm, key = extender_jwks(objs)
        expect("data" not in objs.get("ConfigMap", cm), "the identity ConfigMap renders no keys under sync")

    @check
    def jwks_sync_rbac_is_least_privilege():
        objs = render(*SYNC)
        account = name("jwks-sync")
        cm, _ = extender_jwks(objs)
        role = objs.get("Role", account)
        eq(role["metadata"]["namespace"], NAMESPACE, "Role namespace")
        eq(role["rules"], [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [cm],
                            "verbs": ["get", "patch"]}], "Role rules (the extender's identity ConfigMap only)")
        rb = objs.get("RoleBinding", account)
        eq(rb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account}, "RoleBinding")
        eq(rb["subjects"], [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}],
           "RoleBinding subjects")
        crbs = [d for d in sync_objects(objs) if d["kind"] == "ClusterRoleBinding"]
        eq(len(crbs), 1, "jwks-sync ClusterRoleBindings")
        eq(crbs[0]["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "system:service-account-issuer-discovery"}, "ClusterRoleBinding roleRef")
        eq(crbs[0]["subjects"], rb["subjects"], "ClusterRoleBinding subjects")
        expect(not any(d["kind"] == "ClusterRole" for d in sync_objects(objs)),
               "the sync uses the built-in ClusterRole, it defines none")
        # Nobody else is bound to the sync's roles; the sync pods run as the sync account.
        for d in objs.of("RoleBinding") + objs.of("ClusterRoleBinding"):
            if d not in crbs and d is not rb:
                expect(all(s.get("name") != account for s in d["subjects"]), f"{d['metadata']['name']} binds {account}")
                expect(d["roleRef"]["name"] != account, f"{d['metadata']['name']} grants the sync Role")
        for kind, pod in sync_pods(objs).items():
            eq(pod["spec"]["serviceAccountName"], account, f"{kind} account")
        expect(objs.get("ServiceAccount", account)["automountServiceAccountToken"] is False,
               "the account's token is mounted only into the sync pods")
        expect(objs.get("ServiceAccount", name("extender"))["automountServiceAccountToken"] is False,
               "the extender still has no API access")

    @check
    def jwks_sync_writes_the_configmap_the_extender_reads():
        for release in (t.RELEASE, "prod"):
            objs = render(*SYNC, release=release)
            config = yaml.safe_load(objs.get("ConfigMap", name("extender", release))["data"]["extender.yaml"])
            directory, key = os.path.split(config["grpc"]["identity"]["jwksFile"])
            volume = t.mounts_of(objs.get("Deployment", name("extender", release)), "extender")[directory]
            cm = volume["configMap"]["name"]
            eq(volume["configMap"].get("items"), [{"key": key, "path": key}],
               "the identity volume lists the key, so the kubelet waits for it")
            expect(objs.has("ConfigMap", cm), f"the identity ConfigMap {cm} is rendered (Helm owns it)")
            role = objs.get("Role", name("jwks-sync", release))
            eq(role["rules"][0]["resourceNames"], [cm], f"Role of release {release}")
            for kind, pod in sync_pods(objs, release).items():
                _, env = script_env(pod)
                eq((env["JWKS_CONFIGMAP"], env["JWKS_KEY"], env["JWKS_NAMESPACE"]), (cm, key, NAMESPACE),
                   f"{kind} target (release {release})")

    @check
    def jwks_sync_pods_are_restricted():
        objs = render(*SYNC, "extender.identity.jwksSync.schedule=@hourly")
        eq(objs.get("CronJob", name("jwks-sync"))["spec"]["schedule"], "@hourly", "schedule")
        for kind, pod in sync_pods(objs).items():
            spec = pod["spec"]
            psc = spec["securityContext"]
            expect(psc.get("runAsNonRoot") is True and psc.get("runAsUser", 0) != 0, f"{kind}: non-root {psc}")
            eq(psc.get("seccompProfile"), {"type": "RuntimeDefault"}, f"{kind} seccomp")
            for key in ("hostNetwork", "hostPID", "hostIPC"):
                expect(not spec.get(key), f"{kind}: {key}")
            expect(all("hostPath" not in v for v in spec.get("volumes", [])), f"{kind}: hostPath volume")
            c = container({"spec": {"template": pod}}, "jwks-sync")
            sc = c["securityContext"]
            expect(sc.get("allowPrivilegeEscalation") is False, f"{kind}: allowPrivilegeEscalation")
            expect(sc.get("readOnlyRootFilesystem") is True, f"{kind}: readOnlyRootFilesystem")
            eq(sc.get("capabilities"), {"drop": ["ALL"]}, f"{kind} capabilities")
            expect(not sc.get("privileged"), f"{kind}: privileged")
            expect(c["resources"]["limits"]["memory"], f"{kind}: memory limit")
            expect(c["image"].startswith("registry.k8s.io/kubectl:v1."), f"{kind} image {c['image']}")

    @check
    def jwks_sync_image_follows_the_cluster():
        values = yaml.safe_load(open(os.path.join(t.CHART, "values.yaml"), encoding="utf-8"))
        by_minor = values["scheduler"]["image"]["tagByMinor"]

        def images(*sets, kube):
            args = ["template", t.RELEASE, t.CHART, "--namespace", NAMESPACE, "--kube-version", kube]
            for s in list(SYNC) + list(sets):
                args += ["--set", s]
            return t.helm(*args)

        for kube in ("1.30.4", "1.36.0"):
            out = images(kube=kube)
            expect(out.returncode == 0, f"--kube-version {kube}: {out.stderr[-300:]}")
            objs = t.Objects([d for d in yaml.safe_load_all(out.stdout) if d])
            for kind, pod in sync_pods(objs).items():
                c = container({"spec": {"template": pod}}, "jwks-sync")
                eq(c["image"], "registry.k8s.io/kubectl:" + by_minor[kube.rsplit(".", 1)[0]], f"{kind} image on {kube}")
        out = images("extender.identity.jwksSync.image.tag=v1.29.9", kube="1.27.3")
        expect(out.returncode == 0 and "registry.k8s.io/kubectl:v1.29.9" in out.stdout,
               f"a set tag is used as given: {out.stderr[-300:]}")
        out = images(kube="1.27.3")
        expect(out.returncode != 0 and "registry.k8s.io/kubectl is published from Kubernetes 1.28" in out.stderr,
               f"no kubectl image before 1.28 must fail the render: {out.stderr[-300:]}")

    @check
    def jwks_sync_refuses_bad_values():
        refusals = [
            (["extender.identity.jwksSync.enabled=true"], "needs extender.identity.issuer"),
            (SYNC + ["json:extender.identity.jwks=" + json.dumps(JWKS)], "set one"),
            (SYNC + ["extender.identity.jwksSync.schedule=every hour"], "schedule"),
            (SYNC + ["extender.identity.jwksSync.schedule=* * * *"], "schedule"),
            (SYNC + ["extender.identity.jwksSync.image.tag=latest"], "tag"),
            (SYNC + ["extender.identity.jwksSync.image.pullPolicy=Sometimes"], "pullPolicy"),
            (SYNC + ["extender.identity.jwksSync.verbs=create"], "verbs"),
            (SYNC + ["extender.identity.jwksSync.resources.limit.cpu=1"], "limit"),
        ]
        for sets, fragment in refusals:
            try:
                render(*sets)
            except t.RenderError as e:
                expect(fragment in str(e), f"--set {' '.join(sets)} failed without naming {fragment!r}: {e}")
                continue
            raise AssertionError(f"--set {' '.join(sets)} was accepted; the chart must refuse it")

    def run_script(pod, served, current):
        script, env = script_env(pod)
        with tempfile.TemporaryDirectory() as d:
            bindir = os.path.join(d, "bin")
            os.mkdir(bindir)
            kubectl = os.path.join(bindir, "kubectl")
            with open(kubectl, "w", encoding="utf-8") as f:
                f.write(FAKE_KUBECTL)
            os.chmod(kubectl, stat.S_IRWXU)
            for file, text in (("jwks", served), ("current", current)):
                with open(os.path.join(d, file), "w", encoding="utf-8") as f:
                    f.write(text)
            run_env = dict(env, FAKE_DIR=d, PATH=bindir + os.pathsep + os.environ["PATH"])
            out = subprocess.run(["bash", "-c", script], env=run_env, capture_output=True, text=True, timeout=30)
            patch = None
            if os.path.exists(os.path.join(d, "patch")):
                with open(os.path.join(d, "patch"), encoding="utf-8") as f:
                    patch = f.read()
            with open(os.path.join(d, "calls"), encoding="utf-8") as f:
                calls = f.read().splitlines()
            return out, patch, calls

    @check
    def jwks_sync_script_patches_the_key_with_a_fake_kubectl():
        objs = render(*SYNC)
        cm, key = extender_jwks(objs)
        for kind, pod in sync_pods(objs).items():
            # A new key set (with characters JSON must escape, and the trailing
            # newline the API server's answer may have): one merge patch of that key.
            tricky = '{"keys":[{"kty":"EC","kid":"a\\"b\\\\c","crv":"P-256","x":"AQ","y":"AQ"}],\n "x":"\tq"}'
            for served in (JWKS, JWKS + "\n", tricky):
                out, patch, calls = run_script(pod, served, "")
                expect(out.returncode == 0, f"{kind}: script failed: {out.stderr}")
                expect(patch is not None, f"{kind}: no patch; calls {calls}")
                args = patch.splitlines()
                eq(args[:6], ["patch", "configmap", cm, "-n", NAMESPACE, "--type"], f"{kind} patch arguments")
                eq(args[6:8], ["merge", "-p"], f"{kind} patch type")
                try:
                    body = json.loads("\n".join(args[8:]))
                except json.JSONDecodeError as e:
                    raise AssertionError(f"{kind}: the patch is not JSON ({e}): {args[8:]}") from e
                eq(body, {"data": {key: served.rstrip("\n")}}, f"{kind} patch body")
                eq(calls[0], "get --raw /openid/v1/jwks", f"{kind}: first call")
                expect(f"get configmap {cm} -n {NAMESPACE}" in calls[1], f"{kind}: reads its ConfigMap: {calls}")
            # Already up to date: no patch.
            out, patch, calls = run_script(pod, JWKS, JWKS)
            expect(out.returncode == 0 and patch is None, f"{kind}: patched an up-to-date ConfigMap: {calls}")
            expect("up to date" in out.stdout, f"{kind}: says so: {out.stdout}")
            # Not a JWKS (an error page, an empty key list): fails, writes nothing.
            for served in ("", "<html>forbidden</html>", '{"keys":[]}'):
                out, patch, calls = run_script(pod, served, JWKS)
                expect(out.returncode != 0 and patch is None, f"{kind}: accepted {served!r}: {calls}")
                expect("not a JWKS with keys" in out.stderr, f"{kind}: names the problem: {out.stderr}")

    @check
    def jwks_sync_notes_name_the_rendered_job():
        expect("jwksSync" not in t.render_notes(), "NOTES.txt mentions the sync when it is off")
        notes = t.render_notes(*SYNC)
        objs = render(*SYNC)
        refs = re.findall(r"kubectl -n (\S+) (?:logs|get) (job|cronjob)/(\S+)", notes)
        eq(sorted(kind for _, kind, _ in refs), ["cronjob", "job"], f"NOTES.txt commands:\n{notes}")
        for ns, kind, obj in refs:
            eq(ns, NAMESPACE, f"NOTES.txt {kind} namespace")
            expect(objs.has({"job": "Job", "cronjob": "CronJob"}[kind], obj), f"NOTES.txt names {kind}/{obj}, not rendered")
        cm, _ = extender_jwks(objs)
        expect(cm in notes, f"NOTES.txt names the ConfigMap {cm}")
