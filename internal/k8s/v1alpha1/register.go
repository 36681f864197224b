package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the API.
const (
	Group   = "vipstack.io"
	Version = "v1alpha1"
)

// GroupVersion is vipstack.io/v1alpha1.
func GroupVersion() schema.GroupVersion { return schema.GroupVersion{Group: Group, Version: Version} }

// AddToScheme registers the API's types.
func AddToScheme(s *runtime.Scheme) error {
	gv := GroupVersion()
	s.AddKnownTypes(gv, &VIPGroup{}, &VIPGroupList{}, &IPPool{}, &IPPoolList{}, &BGPPeer{}, &BGPPeerList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}
