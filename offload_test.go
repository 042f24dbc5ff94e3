package chainplan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseTensor(t *testing.T) {
	tests := []struct {
		in      string
		want    Tensor
		wantErr bool
	}{
		{"a0", Tensor{0, false}, false},
		{"abar0", Tensor{0, false}, false},
		{"a12", Tensor{12, false}, false},
		{"abar3", Tensor{3, true}, false},
		{"b3", Tensor{}, true},
		{"a", Tensor{}, true},
		{"abar", Tensor{}, true},
		{"a-1", Tensor{}, true},
		{"a+1", Tensor{}, true},
		{"a1x", Tensor{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTensor(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseTensor(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("ParseTensor(%q)=%+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
	if got, want := (Tensor{0, true}).String(), "a0"; got != want {
		t.Fatalf("String()=%q, want %q", got, want)
	}
}

func TestTransferJSON(t *testing.T) {
	tests := []struct {
		name string
		tr   Transfer
		json string
	}{
		{"Offload", Transfer{Dir: TransferOffload, Tensor: Tensor{0, false}, Bytes: 2, Anchor: -1},
			`{"dir":"offload","tensor":"a0","bytes":2,"after":-1}`},
		{"Prefetch", Transfer{Dir: TransferPrefetch, Tensor: Tensor{2, true}, Bytes: 3, Anchor: 9},
			`{"dir":"prefetch","tensor":"abar2","bytes":3,"before":9}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.tr)
			if err != nil || string(b) != tt.json {
				t.Fatalf("Marshal=%s (%v), want %s", b, err, tt.json)
			}
			var got Transfer
			if err := json.Unmarshal(b, &got); err != nil || got != tt.tr {
				t.Fatalf("Unmarshal=%+v (%v), want %+v", got, err, tt.tr)
			}
		})
	}
}

func TestParsePlanOffload(t *testing.T) {
	const head = `{"algo":"pofo","sequence":[{"op":"F_all","stage":1},{"op":"F_all","stage":2},{"op":"B","stage":2},{"op":"B","stage":1}],"offload":`
	tests := []struct {
		name, offload, want string
	}{
		{"Valid", `{"bandwidth_bytes_per_s":1,"memory_model":"fractional","sync_at_loss":true,"transfers":[{"dir":"offload","tensor":"a0","bytes":1,"after":-1},{"dir":"prefetch","tensor":"a0","bytes":1,"before":3}],"timing":{"compute_start":[0,1,2,3],"transfer_start":[0,2]}}`, ""},
		{"BadBandwidth", `{"bandwidth_bytes_per_s":0,"memory_model":"integral","transfers":[]}`, "bandwidth_bytes_per_s must be positive"},
		{"BadModel", `{"bandwidth_bytes_per_s":1,"memory_model":"wavy","transfers":[]}`, "unknown memory_model"},
		{"BadDir", `{"bandwidth_bytes_per_s":1,"memory_model":"integral","transfers":[{"dir":"sideways","tensor":"a0","bytes":1,"after":-1}]}`, "unknown dir"},
		{"OffloadWithBefore", `{"bandwidth_bytes_per_s":1,"memory_model":"integral","transfers":[{"dir":"offload","tensor":"a0","bytes":1,"before":2}]}`, `needs "after"`},
		{"PrefetchWithoutBefore", `{"bandwidth_bytes_per_s":1,"memory_model":"integral","transfers":[{"dir":"prefetch","tensor":"a0","bytes":1}]}`, `needs "before"`},
		{"BadTensor", `{"bandwidth_bytes_per_s":1,"memory_model":"integral","transfers":[{"dir":"offload","tensor":"x1","bytes":1,"after":0}]}`, "want a<stage>"},
		{"AnchorOutOfRange", `{"bandwidth_bytes_per_s":1,"memory_model":"integral","transfers":[{"dir":"prefetch","tensor":"a0","bytes":1,"before":4}]}`, "anchor out of range"},
		{"TimingLength", `{"bandwidth_bytes_per_s":1,"memory_model":"integral","transfers":[],"timing":{"compute_start":[0],"transfer_start":[]}}`, "timing has 1 compute"},
		{"UnknownField", `{"bandwidth_bytes_per_s":1,"memory_model":"integral","transfers":[{"dir":"offload","tensor":"a0","bytes":1,"after":-1,"when":3}]}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePlan([]byte(head + tt.offload + "}"))
			if tt.want == "" {
				if err != nil || p.Offload == nil || len(p.Offload.Transfers) != 2 {
					t.Fatalf("ParsePlan: %v %+v", err, p)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParsePlan error %v, want ErrInvalidPlan mentioning %q", err, tt.want)
			}
		})
	}
}
