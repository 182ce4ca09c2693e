package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// object is one Kubernetes object as JSON, and the few fields the example reads of it.
type object struct {
	raw        json.RawMessage
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ReplicatedJobs []struct {
			Name string `json:"name"`
		} `json:"replicatedJobs"`
	} `json:"spec"`
}

func (o object) key() string {
	ns := o.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + o.Metadata.Name
}

// readObjects reads what kubectl prints: YAML documents or a JSON stream (a text starting with
// `{` or `[` is JSON, as kubectl's decoder takes it), each an object or a List of objects.
// YAML goes through sigs.k8s.io/yaml, kubectl's own YAML-to-JSON step (go-yaml v2 scalars).
func readObjects(text []byte, source string) ([]object, error) {
	var docs []json.RawMessage
	trimmed := bytes.TrimLeft(text, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for {
			var doc json.RawMessage
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: not valid JSON: %v", source, err)
			}
			docs = append(docs, doc)
		}
	} else {
		for i, part := range yamlDocuments(text) {
			doc, err := yaml.YAMLToJSON(part)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: not valid YAML: %v", source, i+1, err)
			}
			docs = append(docs, doc)
		}
	}
	var out []object
	for i, doc := range docs {
		doc = bytes.TrimSpace(doc)
		if len(doc) == 0 || string(doc) == "null" {
			continue
		}
		if doc[0] == '[' {
			return nil, fmt.Errorf("%s: document %d: must be a Kubernetes object, not an array", source, i+1)
		}
		var list struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(doc, &list); err != nil {
			return nil, fmt.Errorf("%s: document %d: must be a Kubernetes object: %v", source, i+1, err)
		}
		items := []json.RawMessage{doc}
		if list.Kind == "List" || (strings.HasSuffix(list.Kind, "List") && list.Items != nil) {
			items = list.Items
		}
		for j, item := range items {
			o := object{raw: item}
			if err := json.Unmarshal(item, &o); err != nil {
				return nil, fmt.Errorf("%s: document %d, item %d: must be a Kubernetes object: %v", source, i+1, j+1, err)
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// yamlDocuments splits a YAML stream at its `---` lines, as Kubernetes' YAML reader does.
func yamlDocuments(text []byte) [][]byte {
	var docs [][]byte
	var current bytes.Buffer
	scanner := bufio.NewScanner(bytes.NewReader(text))
	scanner.Buffer(make([]byte, 64*1024), len(text)+1)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, "---") && strings.TrimSpace(line[3:]) == "" {
			docs = append(docs, append([]byte(nil), current.Bytes()...))
			current.Reset()
			continue
		}
		current.WriteString(line)
		current.WriteByte('\n')
	}
	return append(docs, current.Bytes())
}

// pick finds the JobSet to check (the only one, or the one named "NAME" or "NAMESPACE/NAME")
// and the objects of its namespace beside it; the decider keeps those the JobSet controls.
func pick(objects []object, name string) (object, []object, error) {
	var jobsets []object
	for _, o := range objects {
		if o.Kind == "JobSet" && (name == "" || o.key() == name || o.Metadata.Name == name) {
			jobsets = append(jobsets, o)
		}
	}
	switch {
	case len(jobsets) == 0 && name != "":
		return object{}, nil, fmt.Errorf("no JobSet %s in the input", name)
	case len(jobsets) == 0:
		return object{}, nil, fmt.Errorf("the input holds no JobSet")
	case len(jobsets) > 1:
		return object{}, nil, fmt.Errorf("the input holds %d JobSets: pick one with --name", len(jobsets))
	}
	js := jobsets[0]
	ns := strings.SplitN(js.key(), "/", 2)[0]
	var owned []object
	for _, o := range objects {
		if o.Kind != "JobSet" && strings.SplitN(o.key(), "/", 2)[0] == ns {
			owned = append(owned, o)
		}
	}
	return js, owned, nil
}
