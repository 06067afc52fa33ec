package localk8s

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// CoreDNSPort is the port CoreDNS listens on inside its pod. Not 53: the
// image runs as a non-root user without NET_BIND_SERVICE; the kube-dns
// Service maps 53 to it.
const CoreDNSPort = 1053

// Corefile serves cluster.local (and reverse zones) from the API and
// nothing else: there is no upstream to forward to.
const Corefile = `.:1053 {
    errors
    health {
        lameduck 2s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
}
`

// DNSObjects are the kube-system objects of the cluster DNS.
func DNSObjects(c Config) (*corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *corev1.ConfigMap, *appsv1.Deployment, *corev1.Service) {
	ns := "kube-system"
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta("coredns")}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:coredns"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "coredns", Namespace: ns}},
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta("coredns"), Data: map[string]string{"Corefile": Corefile}}
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}}, PeriodSeconds: 2}
	}
	dep := &appsv1.Deployment{
		ObjectMeta: meta("coredns"),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "coredns",
					// Default: the kubelet's resolvConf, not the cluster DNS
					// this pod is about to become.
					DNSPolicy: corev1.DNSDefault,
					Containers: []corev1.Container{{
						Name:            "coredns",
						Image:           CoreDNSImage,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: CoreDNSPort, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: CoreDNSPort, Protocol: corev1.ProtocolTCP},
						},
						VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
						ReadinessProbe: probe("/ready", 8181),
						LivenessProbe:  probe("/health", 8080),
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
					}}}},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: meta("kube-dns"),
		Spec: corev1.ServiceSpec{
			ClusterIP: c.DNSServiceIP().String(),
			Selector:  labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(CoreDNSPort), Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromInt32(CoreDNSPort), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	return sa, role, binding, cm, dep, svc
}

// deployDNS creates the DNS objects; existing ones (a reused state
// directory) are left as they are.
func deployDNS(ctx context.Context, cs kubernetes.Interface, c Config) error {
	sa, role, binding, cm, dep, svc := DNSObjects(c)
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("localk8s: creating %s: %w", what, err)
		}
		return nil
	}
	ns := "kube-system"
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	if err := create("coredns ServiceAccount", err); err != nil {
		return err
	}
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if err := create("system:coredns ClusterRole", err); err != nil {
		return err
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	if err := create("system:coredns ClusterRoleBinding", err); err != nil {
		return err
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err := create("coredns ConfigMap", err); err != nil {
		return err
	}
	// The Service is looked up first: creating one whose name exists fails
	// on its fixed ClusterIP ("provided IP is already allocated", Invalid)
	// before the API server gets to AlreadyExists.
	if _, err := cs.CoreV1().Services(ns).Get(ctx, svc.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		if err := create("kube-dns Service", err); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("localk8s: reading the kube-dns Service: %w", err)
	}
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
	return create("coredns Deployment", err)
}

// LookupViaClusterDNS resolves name through the kube-dns Service from the
// host (kube-proxy's OUTPUT rules carry the query to the CoreDNS pod).
func LookupViaClusterDNS(ctx context.Context, c Config, name string) ([]netip.Addr, error) {
	server := net.JoinHostPort(c.DNSServiceIP().String(), "53")
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return r.LookupNetIP(ctx, "ip4", name)
}
