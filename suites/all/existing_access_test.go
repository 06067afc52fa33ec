package all

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshclaims/meshclaims/framework/apiserver"
	"github.com/meshclaims/meshclaims/framework/inventory"
	"github.com/meshclaims/meshclaims/framework/privateregistry"
)

// A kubeconfig that may do almost everything a sidecar qualification
// needs, but not create the injector's webhook nor exec into pods: the run
// stops in seconds, before the image is built and before any write
// (inventory unchanged), naming each missing verb and resource with the
// phase that needs it. The positive control: the cluster's admin gets past
// the check to the build.
func TestExistingProviderChecksPermissionsBeforeAnyWrite(t *testing.T) {
	charts := istioChartsDir(t, "the check renders Istio's charts")
	bin := e2eBinary(t)
	reg := privateregistry.ForTest(t)
	srv := apiserver.NewForTest(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	userCfg, err := srv.AddUser("qualifier")
	if err != nil {
		t.Fatal(err)
	}
	groups := []string{"", "apps", "policy", "autoscaling", "batch", "networking.k8s.io", "rbac.authorization.k8s.io", "apiextensions.k8s.io",
		"coordination.k8s.io", "discovery.k8s.io", "gateway.networking.k8s.io", "networking.istio.io", "security.istio.io", "telemetry.istio.io",
		"extensions.istio.io", "apiregistration.k8s.io", "storage.k8s.io", "scheduling.k8s.io", "node.k8s.io", "certificates.k8s.io",
		"flowcontrol.apiserver.k8s.io", "resource.k8s.io", "storagemigration.k8s.io", "internal.apiserver.k8s.io", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "almost-admin"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: groups, Resources: []string{"*"}, Verbs: []string{"*"}},
		// Webhooks: read all, write only validation.
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: []string{"*"}},
	}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// pods/exec is denied by binding a role that has everything of the
	// core group but it: RBAC has no deny, so the core group's "*" above
	// is narrowed here instead.
	role.Rules[0].APIGroups = groups[1:]
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Verbs: []string{"*"}, Resources: []string{
		"namespaces", "pods", "pods/log", "pods/portforward", "pods/status", "services", "endpoints", "configmaps", "secrets", "serviceaccounts",
		"nodes", "events", "persistentvolumes", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas", "limitranges", "podtemplates", "componentstatuses", "serviceaccounts/token", "bindings"}})
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "qualifier"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "qualifier"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kc, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := srv.WriteKubeconfigFor(kc, "qualifier", userCfg); err != nil {
		t.Fatal(err)
	}
	before, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	args := func(context string) []string {
		return []string{"-mode=sidecar", "-provider=existing", "-kubeconfig=" + kc, "-context=" + context, "-image-registry=" + reg.Host,
			"-image-registry-ca=" + reg.CAFile, "-netpol-enforcer=calico", "-istio-charts=" + charts,
			"-results=" + filepath.Join(t.TempDir(), "results"), "-ginkgo.v"}
	}
	cmd := exec.CommandContext(ctx, bin, args("qualifier")...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+reg.DockerConfigDir)
	start := time.Now()
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	t.Logf("exit %v after %v", err, time.Since(start).Round(time.Millisecond))
	if err == nil {
		t.Fatalf("the run passed without the permissions it needs:\n%s", lastLinesOf(out, 40))
	}
	for _, w := range []string{"the run's credentials may not do", "nothing was written",
		"Istio install and removal: ", "create admissionregistration.k8s.io/mutatingwebhookconfigurations",
		"measurements: ", "create pods/exec in namespace meshclaims-sidecar"} {
		if !strings.Contains(out, w) {
			t.Errorf("the refusal does not say %q:\n%s", w, lastLinesOf(out, 30))
		}
	}
	for _, w := range []string{"validatingwebhookconfigurations", "portforward"} {
		if strings.Contains(out, "create admissionregistration.k8s.io/"+w) || strings.Contains(out, "pods/"+w+" in") {
			t.Errorf("the refusal names %s, which the user may do:\n%s", w, lastLinesOf(out, 30))
		}
	}
	if strings.Contains(out, "image: building") {
		t.Errorf("the run built the workload image before the check")
	}
	after, err := inventory.Take(ctx, srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	if d := inventory.Compare(before, after); len(d.Added)+len(d.Removed)+len(d.Changed) != 0 {
		t.Errorf("the refused run wrote: added %v, removed %v, changed %v", inventory.Keys(d.Added), inventory.Keys(d.Removed), inventory.Keys(d.Changed))
	}

	t.Run("the cluster's admin gets past the check", func(t *testing.T) {
		reachesBuild(t, bin, reg, args("admin"), "access: the run's credentials may do all")
	})
}
