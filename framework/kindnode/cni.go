package kindnode

import "strings"

// CNIManifest is the node image's /kind/manifests/default-cni.yaml, which
// kind applies at cluster creation when the config keeps its default CNI:
// kube-router (cmd/kube-router, v2.1.0) instead of kind's kindnetd, which
// no module proxy serves and whose NetworkPolicy needs nft queue support
// that some kernels lack. kube-router routes each node's pod CIDR to the
// others (BGP between the nodes, which share the engine's network, so no
// overlay), gives pods a bridge through the CNI config its init container
// installs, and enforces NetworkPolicy with iptables and ipset. Services
// stay with kube-proxy.
//
// Its DaemonSet follows kube-router's daemonset/kubeadm-kuberouter.yaml,
// with the image preloaded (never pulled), and kind's patch marker: kind
// adds CONTROL_PLANE_ENDPOINT (<cluster>-control-plane:6443) to the
// first container's environment, so kube-router reaches the API server by
// the node's name before kube-proxy has made the Service address work.
func CNIManifest() []byte {
	return []byte(strings.ReplaceAll(cniManifest, "KUBE_ROUTER_IMAGE", KubeRouterImage))
}

const cniManifest = `# would you kindly patch this file
# kube-router as the kind node's CNI: written by meshclaims' kindnode package.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-router
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kube-router
rules:
- apiGroups: [""]
  resources: [namespaces, pods, services, nodes, endpoints]
  verbs: [list, get, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, get, watch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
- apiGroups: [""]
  resources: [services/status]
  verbs: [update]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kube-router
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kube-router
subjects:
- kind: ServiceAccount
  name: kube-router
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-router-cfg
  namespace: kube-system
data:
  # The service account's CA and token, for the API server kind names in
  # CONTROL_PLANE_ENDPOINT (--master replaces this server): with --master
  # alone kube-router builds a client without the in-cluster CA.
  kubeconfig: |
    apiVersion: v1
    kind: Config
    clusters:
    - name: kind
      cluster:
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
        server: https://kubernetes.default.svc:443
    users:
    - name: kube-router
      user:
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
    contexts:
    - name: kind
      context:
        cluster: kind
        user: kube-router
    current-context: kind
  cni-conf.json: |
    {
      "cniVersion": "0.3.0",
      "name": "kube-router",
      "plugins": [
        {"name": "kubernetes", "type": "bridge", "bridge": "kube-bridge", "isDefaultGateway": true, "ipam": {"type": "host-local"}},
        {"type": "portmap", "capabilities": {"portMappings": true, "snat": true}}
      ]
    }
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-router
  namespace: kube-system
  labels:
    k8s-app: kube-router
spec:
  selector:
    matchLabels:
      k8s-app: kube-router
  template:
    metadata:
      labels:
        k8s-app: kube-router
    spec:
      priorityClassName: system-node-critical
      serviceAccountName: kube-router
      hostNetwork: true
      hostPID: true
      tolerations:
      - operator: Exists
      containers:
      - name: kube-router
        image: KUBE_ROUTER_IMAGE
        imagePullPolicy: Never
        args:
        - --master=https://$(CONTROL_PLANE_ENDPOINT)
        - --kubeconfig=/etc/kube-router/kubeconfig
        - --run-router=true
        - --run-firewall=true
        - --run-service-proxy=false
        - --enable-cni=true
        - --enable-overlay=false
        - --enable-ipv4=true
        - --enable-ipv6=false
        - --bgp-graceful-restart=true
        - --metrics-port=0
        - --v=1
        env:
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: KUBE_ROUTER_CNI_CONF_FILE
          value: /etc/cni/net.d/10-kuberouter.conflist
        livenessProbe:
          httpGet:
            path: /healthz
            port: 20244
          initialDelaySeconds: 10
          periodSeconds: 3
        securityContext:
          privileged: true
        volumeMounts:
        - name: lib-modules
          mountPath: /lib/modules
          readOnly: true
        - name: cni-conf-dir
          mountPath: /etc/cni/net.d
        - name: xtables-lock
          mountPath: /run/xtables.lock
        - name: kube-router-cfg
          mountPath: /etc/kube-router
          readOnly: true
      initContainers:
      - name: install-cni
        image: KUBE_ROUTER_IMAGE
        imagePullPolicy: Never
        command:
        - /bin/sh
        - -c
        - set -e -x;
          if [ ! -f /etc/cni/net.d/10-kuberouter.conflist ]; then
            TMP=/etc/cni/net.d/.tmp-kuberouter-cfg;
            cp /etc/kube-router/cni-conf.json ${TMP};
            mv ${TMP} /etc/cni/net.d/10-kuberouter.conflist;
          fi
        volumeMounts:
        - name: cni-conf-dir
          mountPath: /etc/cni/net.d
        - name: kube-router-cfg
          mountPath: /etc/kube-router
      volumes:
      - name: lib-modules
        hostPath:
          path: /lib/modules
      - name: cni-conf-dir
        hostPath:
          path: /etc/cni/net.d
      - name: kube-router-cfg
        configMap:
          name: kube-router-cfg
      - name: xtables-lock
        hostPath:
          path: /run/xtables.lock
          type: FileOrCreate
`
