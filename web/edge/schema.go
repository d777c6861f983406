package main

import (
	"fmt"
	"os"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// exposureOption is the method option that marks an RPC a player's screens use
// (protos/electric/common/v1/access.proto). The edge serves only methods marked PUBLIC, so
// the protos, not this binary, say what a browser can reach.
const exposureOption protoreflect.FullName = "electric.common.v1.exposure"

// exposurePublic is EXPOSURE_PUBLIC's number in the Exposure enum.
const exposurePublic protoreflect.EnumNumber = 1

// Schema is the platform's API as the descriptor set describes it: every service and, of
// their methods, the public ones by full path ("/electric.table.v1.TableService/Act").
type Schema struct {
	Files    *protoregistry.Files
	Services []protoreflect.ServiceDescriptor
	Public   map[string]protoreflect.MethodDescriptor
}

// LoadSchema reads a FileDescriptorSet (with imports) written by tools/gen_protos.py.
func LoadSchema(path string) (*Schema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading descriptors: %w", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("parsing descriptors %s: %w", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("linking descriptors %s: %w", path, err)
	}
	return NewSchema(files)
}

// NewSchema selects the public methods of every electric.* service in files.
func NewSchema(files *protoregistry.Files) (*Schema, error) {
	desc, err := files.FindDescriptorByName(exposureOption)
	if err != nil {
		return nil, fmt.Errorf("the descriptors lack %s: %w", exposureOption, err)
	}
	extension, ok := desc.(protoreflect.ExtensionDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not an extension", exposureOption)
	}
	number := extension.Number()
	schema := &Schema{Files: files, Public: map[string]protoreflect.MethodDescriptor{}}
	var failure error
	files.RangeFiles(func(file protoreflect.FileDescriptor) bool {
		services := file.Services()
		for i := 0; i < services.Len(); i++ {
			service := services.Get(i)
			if !isPlatform(service.FullName()) {
				continue
			}
			schema.Services = append(schema.Services, service)
			methods := service.Methods()
			for j := 0; j < methods.Len(); j++ {
				method := methods.Get(j)
				public, err := isPublic(method, number)
				if err != nil {
					failure = err
					return false
				}
				if public {
					schema.Public[MethodPath(method)] = method
				}
			}
		}
		return true
	})
	if failure != nil {
		return nil, failure
	}
	sort.Slice(schema.Services, func(i, j int) bool {
		return schema.Services[i].FullName() < schema.Services[j].FullName()
	})
	return schema, nil
}

// MethodPath is the HTTP path of a method in every RPC protocol: /package.Service/Method.
func MethodPath(method protoreflect.MethodDescriptor) string {
	return fmt.Sprintf("/%s/%s", method.Parent().FullName(), method.Name())
}

// PublicPaths lists the public method paths in order (for the start-up log and tests).
func (s *Schema) PublicPaths() []string {
	paths := make([]string, 0, len(s.Public))
	for path := range s.Public {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	return paths
}

func isPlatform(name protoreflect.FullName) bool {
	const prefix = "electric."
	return len(name) > len(prefix) && string(name[:len(prefix)]) == prefix
}

// isPublic reads the exposure option from the method's options. They were parsed without
// our extension known, so its value sits in their unknown fields: the option is read from
// the wire form, where it is a varint field of the extension's number.
func isPublic(method protoreflect.MethodDescriptor, number protoreflect.FieldNumber) (bool, error) {
	options, ok := method.Options().(*descriptorpb.MethodOptions)
	if !ok || options == nil {
		return false, nil
	}
	raw, err := proto.Marshal(options)
	if err != nil {
		return false, err
	}
	exposure := protoreflect.EnumNumber(0)
	for len(raw) > 0 {
		field, kind, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return false, fmt.Errorf("options of %s: %w", method.FullName(), protowire.ParseError(n))
		}
		raw = raw[n:]
		if field == number && kind == protowire.VarintType {
			value, m := protowire.ConsumeVarint(raw)
			if m < 0 {
				return false, fmt.Errorf("options of %s: %w", method.FullName(), protowire.ParseError(m))
			}
			exposure = protoreflect.EnumNumber(value) // the last occurrence wins, as in proto
		}
		m := protowire.ConsumeFieldValue(field, kind, raw)
		if m < 0 {
			return false, fmt.Errorf("options of %s: %w", method.FullName(), protowire.ParseError(m))
		}
		raw = raw[m:]
	}
	return exposure == exposurePublic, nil
}
