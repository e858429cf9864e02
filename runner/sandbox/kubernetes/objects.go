package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Labels and annotations on every object. Kubernetes label values are
// limited (63 characters of [A-Za-z0-9_.-]), so the envdeploy label set,
// whose owner labels hold "/" and host names, travels whole in
// AnnotationLabels and only selectable, sanitised values become labels.
const (
	LabelStore    = "agentenv.io/store"
	LabelInstance = "agentenv.io/instance"
	LabelKind     = "agentenv.io/kind" // the workload's role: mcp_server, gateway, agent, sandbox
	LabelSandbox  = "agentenv.io/sandbox"
	LabelWorkload = "agentenv.io/workload"
	LabelManaged  = "app.kubernetes.io/managed-by"
	// AnnotationLabels is the JSON of the envdeploy labels (owner,
	// expiry, persistence) that Prune decides on.
	AnnotationLabels = "agentenv.io/labels"
	managedBy        = "agentenv"
)

var invalidLabelChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// labelValue makes v a valid label value: invalid characters become "-",
// and a value too long is cut and suffixed with a hash of the whole, so
// two long ids stay apart.
func labelValue(v string) string {
	s := invalidLabelChars.ReplaceAllString(v, "-")
	if len(s) > validation.LabelValueMaxLength {
		s = s[:validation.LabelValueMaxLength-9] + "-" + shortHash(v)
	}
	return strings.Trim(s, "-_.")
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// objectName builds a DNS-1035 label (Services need one: lower case,
// starting with a letter, at most 63 characters) from parts.
func objectName(parts ...string) string {
	whole := strings.Join(parts, "-")
	s := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(whole), "-"), "-")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "ae-" + s
	}
	if len(s) > validation.DNS1035LabelMaxLength || s != strings.ToLower(whole) {
		// Changed or cut: a hash keeps names of different ids apart.
		if len(s) > validation.DNS1035LabelMaxLength-9 {
			s = s[:validation.DNS1035LabelMaxLength-9]
		}
		s = strings.TrimRight(s, "-") + "-" + shortHash(whole)
	}
	return s
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// meta is the ObjectMeta of one object of group gid: the group's labels
// plus the workload's name and kind.
func meta(name, gid, workload, kind string, groupLabels map[string]string) metav1.ObjectMeta {
	all := maps.Clone(groupLabels)
	if all == nil {
		all = map[string]string{}
	}
	all[envdeploy.LabelSandbox] = gid
	if kind != "" {
		all[envdeploy.LabelRole] = kind
	}
	raw, _ := json.Marshal(all)
	l := map[string]string{LabelSandbox: labelValue(gid), LabelManaged: managedBy}
	if v := all[envdeploy.LabelStore]; v != "" {
		l[LabelStore] = labelValue(v)
	}
	if v := all[envdeploy.LabelInstance]; v != "" {
		l[LabelInstance] = labelValue(v)
	}
	if kind != "" {
		l[LabelKind] = labelValue(kind)
	}
	if workload != "" {
		l[LabelWorkload] = labelValue(workload)
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AnnotationLabels: string(raw)}}
}

// envLabels reads back the envdeploy labels of an object.
func envLabels(m metav1.ObjectMeta) map[string]string {
	var l map[string]string
	if err := json.Unmarshal([]byte(m.Annotations[AnnotationLabels]), &l); err != nil || l == nil {
		return map[string]string{}
	}
	return l
}

// podSpec describes one workload's Pod.
type podSpec struct {
	name, gid, workload, kind string
	groupLabels               map[string]string
	image                     string
	pullSecret                string            // the imagePullSecrets entry; "" = none
	env                       map[string]string // goes into a Secret of the same name
	port                      int
	ttl                       time.Duration // activeDeadlineSeconds; 0 = none
	cpu                       float64       // cores; 0 = no request or limit
	memoryMB                  int           // 0 = no request or limit
	workDir                   string
	hostNetwork               bool
	// command keeps the container alive when the image's own entrypoint
	// would not (deploy_sandbox pods run "sleep infinity"-like commands).
	command []string
}

func (s podSpec) pod() *corev1.Pod {
	f := false
	c := corev1.Container{
		Name:            "main",
		Image:           s.image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		WorkingDir:      s.workDir,
		Command:         s.command,
	}
	if len(s.env) > 0 {
		c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.name}}}}
	}
	if s.port > 0 {
		c.Ports = []corev1.ContainerPort{{Name: "main", ContainerPort: int32(s.port), Protocol: corev1.ProtocolTCP}}
	}
	if rl := s.resources(); rl != nil {
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	}
	pod := &corev1.Pod{
		ObjectMeta: meta(s.name, s.gid, s.workload, s.kind, s.groupLabels),
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{c},
			RestartPolicy: corev1.RestartPolicyNever,
			// Workloads talk to nothing in the cluster's API: no token.
			AutomountServiceAccountToken: &f,
			EnableServiceLinks:           &f,
			HostNetwork:                  s.hostNetwork,
		},
	}
	if s.pullSecret != "" {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s.pullSecret}}
	}
	if s.ttl > 0 {
		secs := int64((s.ttl + time.Second - 1) / time.Second)
		pod.Spec.ActiveDeadlineSeconds = &secs
	}
	return pod
}

// resources turns cpu and memory into a resource list used both as
// requests and limits (Guaranteed QoS: what was asked is what is had).
func (s podSpec) resources() corev1.ResourceList {
	rl := corev1.ResourceList{}
	if s.cpu > 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(s.cpu*1000+0.5), resource.DecimalSI)
	}
	if s.memoryMB > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(int64(s.memoryMB)*1024*1024, resource.BinarySI)
	}
	if len(rl) == 0 {
		return nil
	}
	return rl
}

func (s podSpec) secret() *corev1.Secret {
	data := make(map[string]string, len(s.env))
	maps.Copy(data, s.env)
	return &corev1.Secret{ObjectMeta: meta(s.name, s.gid, s.workload, s.kind, s.groupLabels), StringData: data, Type: corev1.SecretTypeOpaque}
}

func (s podSpec) service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: meta(s.name, s.gid, s.workload, s.kind, s.groupLabels),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelSandbox: labelValue(s.gid), LabelWorkload: labelValue(s.workload)},
			Ports:    []corev1.ServicePort{{Name: "main", Port: int32(s.port), TargetPort: intstr.FromInt32(int32(s.port)), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// validEnvKeys refuses environment names a Secret cannot hold, naming
// the first bad one (envFrom would silently skip it).
func validEnvKeys(env map[string]string) error {
	for k := range env {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return fmt.Errorf("env %q: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}
