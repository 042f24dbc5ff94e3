// Package paradlgolden holds the golden data of ParaDL's oracle (shared/specs/
// paradl_amp_timeprest.md §2.11): the models behind the authors' two projection logs and
// the toy model, with their expected tables. The paradl tests check them to 1e-9 and
// bench/parallel reproduces them in docs/parallel-eval.md: one definition for both.
package paradlgolden

import (
	"github.com/chainplan/chainplan/planner/workload"
)

// Delta is δ, bytes per element in every golden model.
const Delta = 4

// DataRow is one row of the ResNet-50 data-parallel log (§2.11 A): per epoch.
type DataRow struct {
	P            int
	CompS, CommS float64
	CommPerIterS float64 // printed to 7 decimals
}

// ResNet50DataDatasetSize, ResNet50BatchPerDevice, ResNet50MemoryBytes and
// ResNet50SerialS are the log's settings and its per-device memory and serial epoch.
const (
	ResNet50DatasetSize    = 1_280_000
	ResNet50BatchPerDevice = 64
	ResNet50MemoryBytes    = 15_434_845_696
	ResNet50SerialS        = 3992.96256
)

// ResNet50Data is data_resnet_scaling_proj.log.
var ResNet50Data = []DataRow{
	{2, 1996.48128, 18.3672128, 0.0018367},
	{4, 998.24064, 13.9104096, 0.0027821},
	{8, 499.12032, 32.8884724, 0.0131554},
	{16, 249.56016, 18.187137, 0.0145497},
	{32, 124.78008, 9.9839437, 0.0159743},
	{64, 62.39004, 5.678286395, 0.0181415},
	{128, 31.19502, 3.4823479451, 0.0221806},
	{256, 15.59751, 2.3931260808, 0.0302927},
	{512, 7.798755, 1.8473165088, 0.0461829},
	{1024, 3.8993775, 1.5584128296, 0.0779206},
	{2048, 1.94968875, 1.4137478586, 0.1413748},
}

// ResNet50Log is the model behind the ResNet-50 log: totals only, so one layer holding
// them, times per sample (batch 1).
func ResNet50Log() *workload.Model {
	return &workload.Model{Name: "resnet50-log", BatchSize: 1, DTypeBytes: Delta,
		Layers: []workload.Layer{{Name: "all", FwdTimeS: 0.003119502,
			InBytes: 14_971_596 * Delta, OutBytes: 14_819_368 * Delta, WeightBytes: 22_734_016 * Delta}}}
}

// FilterRow is one row of the VGG16 filter-parallel log (§2.11 B): per epoch.
type FilterRow struct {
	P            int
	CompS, CommS float64
}

// VGG16DatasetSize and VGG16GlobalBatch are the log's settings (strong scaling).
const (
	VGG16DatasetSize = 1_280_000
	VGG16GlobalBatch = 32
)

// VGG16Filter is filter_vgg_scaling_proj.log.
var VGG16Filter = []FilterRow{
	{2, 5465.10787204, 2155.10112}, {4, 2920.48484805, 3253.71168}, {8, 1648.17333606, 15318.41304},
	{16, 1012.01758007, 16767.2124}, {32, 693.939702069, 18059.01528}, {64, 534.90076307, 19839.72312},
}

// VGG16Log is the model behind the VGG16 log: the 13 convolutions (partitioned) with their
// per-sample times and output sizes at 226 × 226 (Chainer's ceil-mode pooling: 226, 113,
// 57, 29, 15, whose Σ|y| is the log's 13,939,200), and one unpartitioned layer holding the
// rest of the network's time.
func VGG16Log() *workload.Model {
	convs := []struct {
		name    string
		c, f    int64
		side    int64
		perSamp float64
	}{
		{"conv1_1", 3, 64, 226, 4.34765322602e-05}, {"conv1_2", 64, 64, 226, 0.000927499354885},
		{"conv2_1", 64, 128, 113, 0.00046375648711}, {"conv2_2", 128, 128, 113, 0.000927512974219},
		{"conv3_1", 128, 256, 57, 0.00047202796272}, {"conv3_2", 256, 256, 57, 0.00094405592544},
		{"conv3_3", 256, 256, 57, 0.00094405592544}, {"conv4_1", 256, 512, 29, 0.000488843300624},
		{"conv4_2", 512, 512, 29, 0.000977686601249}, {"conv4_3", 512, 512, 29, 0.000977686601249},
		{"conv5_1", 512, 512, 15, 0.000261781761582}, {"conv5_2", 512, 512, 15, 0.000261781761582},
		{"conv5_3", 512, 512, 15, 0.000261781761582},
	}
	m := &workload.Model{Name: "vgg16-log", BatchSize: 1, DTypeBytes: Delta,
		Known: workload.FieldShapes | workload.FieldCounts | workload.FieldModules}
	for _, c := range convs {
		y := c.f * c.side * c.side * Delta
		m.Layers = append(m.Layers, workload.Layer{Name: c.name, FwdTimeS: c.perSamp, InBytes: y, OutBytes: y,
			WeightBytes: 9 * c.c * c.f * Delta,
			Parts:       []workload.Part{{Name: c.name, InChannels: c.c, OutChannels: c.f, OutBytesPerSample: float64(y)}}})
	}
	m.Layers = append(m.Layers, workload.Layer{Name: "pools+fc", FwdTimeS: 0.00029364205, InBytes: 512 * 8 * 8 * Delta,
		OutBytes: 1000 * Delta, WeightBytes: (512*8*8*4096 + 4096*4096 + 4096*1000) * Delta})
	return m
}

// ToyRow is one row of the toy model's table (§2.11 C).
type ToyRow struct {
	Strategy           string
	P, P2              int
	CompS, CommS       float64
	CompIter, CommIter float64 // the comm per iteration printed to 8 decimals
	MemoryBytes        int64
}

// The toy model's run: D, B, α (s), β (s/B).
const (
	ToyDatasetSize = 51200
	ToyGlobalBatch = 256
	ToyAlpha       = 1e-5
	ToyBeta        = 1e-10
	ToySegments    = 4
)

// Toy is the toy model's table.
var Toy = []ToyRow{
	{"serial", 1, 0, 55.36, 0, 0.2768, 0, 548_735_016},
	{"data", 4, 0, 15.04, 0.09527424, 0.0752, 0.00047637, 141_347_880},
	{"spatial", 4, 0, 15.04, 0.63045504, 0.0752, 0.00315228, 141_347_880},
	{"pipeline", 3, 0, 47.08, 3.3754432, 0.2354, 0.01687722, 268_730_624},
	{"filter", 4, 0, 13.84, 6.07579776, 0.0692, 0.03037899, 544_571_304},
	{"df", 4, 2, 14.24, 2.05702400, 0.0712, 0.01028512, 274_367_784},
}

// ToyModel is the toy model of §2.11 C: every layer partitioned and spatially split, times
// per sample, WU per iteration.
func ToyModel() *workload.Model {
	type row struct {
		x, y, w, bi  int64
		fw, bw, wu   float64
		c, f, hx, hd int64
	}
	rows := []row{
		{3072, 65536, 1728, 64, 1e-4, 2e-4, 1e-3, 3, 64, 192, 4096},
		{65536, 65536, 36864, 64, 2e-4, 4e-4, 2e-3, 64, 64, 4096, 4096},
		{65536, 10, 655360, 10, 5e-5, 1e-4, 5e-3, 64, 10, 0, 0},
	}
	m := &workload.Model{Name: "toy", BatchSize: 1, DTypeBytes: Delta,
		Known: workload.FieldShapes | workload.FieldCounts | workload.FieldModules}
	for i, r := range rows {
		name := []string{"conv1", "conv2", "fc"}[i]
		m.Layers = append(m.Layers, workload.Layer{Name: name, FwdTimeS: r.fw, BwdTimeS: r.bw, UpdateTimeS: r.wu,
			InBytes: r.x * Delta, OutBytes: r.y * Delta, WeightBytes: r.w * Delta, BiasBytes: r.bi * Delta, Spatial: true,
			Parts: []workload.Part{{Name: name, InChannels: r.c, OutChannels: r.f, OutBytesPerSample: float64(r.y * Delta),
				Halo: true, HaloXBytes: float64(r.hx * Delta), HaloDYBytes: float64(r.hd * Delta)}}})
	}
	return m
}
