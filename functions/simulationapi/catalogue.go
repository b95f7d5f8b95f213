package simulationapi

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Scenario is one entry of the scenario catalogue.
type Scenario struct {
	Name        string
	DisplayName string
	Description string
}

// Scenarios are the traffic kinds a dataset can belong to; each dataset belongs to exactly one.
var Scenarios = []Scenario{
	{"chat", "Chat", "Conversational and general assistant traffic."},
	{"api-calling", "Tool & API Use", "Tool-use, agent, and business API traffic."},
	{"coding", "Code Generation", "Code generation and software engineering traffic."},
}

// DatasetFile is one file of a dataset as published upstream.
type DatasetFile struct {
	Name   string // file name in the dataset (and under the mirror)
	URL    string // upstream location
	SHA256 string // pinned digest of the upstream bytes
}

// Dataset is a registered public trace dataset.
type Dataset struct {
	Name             string
	Filename         string // file (or directory, for multi-file datasets) in the data dir
	Scenario         string
	TraceFormat      string
	Description      string
	License          string
	SourceRepository string
	// Files lists what is fetched. One file: the dataset is that file (after Filter). Several:
	// the dataset is a directory holding them, and its SHA256 is the digest of a SHA256SUMS-style
	// manifest of the files ("<sha256>  <name>\n", sorted by name).
	Files []DatasetFile
	// Filter, when set, keeps only the CSV rows whose column equals the value (BurstGPT's
	// upstream file mixes conversation and API logs; each dataset keeps one kind).
	Filter *CSVFilter
	// Generate, when set, makes the dataset's bytes instead of fetching them (the built-in
	// sample): it is written into the data dir at start and on download, with no network.
	Generate func() []byte
	// Local marks an operator-registered dataset (a <name>.dataset.json beside its file in the
	// datasets dir): nothing to download, any loaded parser module, user modules included.
	Local bool
}

// CSVFilter selects CSV rows by one column.
type CSVFilter struct{ Column, Value string }

// URL is the upstream address shown in the catalogue (the directory for multi-file datasets).
func (d Dataset) URL() string {
	if d.Local || d.Generate != nil {
		return ""
	}
	if len(d.Files) == 1 {
		return d.Files[0].URL
	}
	return d.SourceRepository
}

// SHA256 is the pinned digest of the dataset: the upstream file's, or the manifest's.
func (d Dataset) SHA256() string {
	if d.Local {
		return ""
	}
	if len(d.Files) == 1 {
		return d.Files[0].SHA256
	}
	return manifestDigest(d.Files)
}

const (
	mooncakeRevision = "9fbd622256e7a26aeea9f038e316eeb58203c102"
	mooncakeRepo     = "https://github.com/kvcache-ai/Mooncake"
	bailianRevision  = "5f7439c51ec248a0c585f7d90a41a6f57773b912"
	bailianRepo      = "https://github.com/alibaba-edu/qwen-bailian-usagetraces-anon"
	burstGPTRepo     = "https://github.com/HPMLL/BurstGPT"
	burstGPTURL      = "https://github.com/HPMLL/BurstGPT/releases/download/v2.0/BurstGPT_1.csv"
	burstGPTSHA256   = "4bb3783693d0a435686fbfc885615d2349bd067239079fa4b749f2e679e12122"
	wekaRevision     = "94f6046dfd9c0c8bc0cdb24a5aa6579bac8669bf"
	wekaRepo         = "https://github.com/callanjfox/kv-cache-tester"
)

func mooncake(name, filename, scenario, path, sha, description string) Dataset {
	return Dataset{Name: name, Filename: filename, Scenario: scenario, TraceFormat: "mooncake_trace",
		Description: description, License: "Apache-2.0", SourceRepository: mooncakeRepo,
		Files: []DatasetFile{{Name: filename, SHA256: sha,
			URL: "https://raw.githubusercontent.com/kvcache-ai/Mooncake/" + mooncakeRevision + "/" + path}}}
}

func bailian(name, filename, scenario, sha, description string) Dataset {
	return Dataset{Name: name, Filename: filename, Scenario: scenario, TraceFormat: "bailian_trace",
		Description: description, License: "Apache-2.0", SourceRepository: bailianRepo,
		Files: []DatasetFile{{Name: filename, SHA256: sha,
			URL: "https://media.githubusercontent.com/media/alibaba-edu/qwen-bailian-usagetraces-anon/" + bailianRevision + "/" + filename}}}
}

func burstGPT(name, filename, scenario, logType, description string) Dataset {
	return Dataset{Name: name, Filename: filename, Scenario: scenario, TraceFormat: "burst_gpt_trace",
		Description: description, License: "CC-BY-4.0", SourceRepository: burstGPTRepo,
		Files:  []DatasetFile{{Name: "BurstGPT_1.csv", URL: burstGPTURL, SHA256: burstGPTSHA256}},
		Filter: &CSVFilter{Column: "Log Type", Value: logType}}
}

//go:embed datasets/weka-kv-cache-tester.sha256
var wekaManifest string

func weka() Dataset {
	files, err := parseManifest(wekaManifest, func(name string) string {
		return "https://raw.githubusercontent.com/callanjfox/kv-cache-tester/" + wekaRevision + "/traces/" + name
	})
	if err != nil {
		panic(err) // an embedded, tested file: a parse failure is a build defect
	}
	return Dataset{Name: "weka-kv-cache-tester", Filename: "weka-kv-cache-tester", Scenario: "coding",
		TraceFormat: "weka_public_dataset", License: "Apache-2.0", SourceRepository: wekaRepo, Files: files,
		Description: "WEKA agentic-coding traces of real Claude Code sessions (124 traces, one JSON file each, " +
			"some with subagents), from callanjfox/kv-cache-tester."}
}

// Datasets is the registry of public trace datasets, sorted by name.
var Datasets = sortedDatasets(
	mooncake("mooncake-arxiv", "mooncake_trace.jsonl", "chat", "FAST25-release/arxiv-trace/mooncake_trace.jsonl",
		"b434f1816a707f4bac697235588184ebc374c9907cb981bb65fb0643471fe711", "Original Mooncake arXiv trace used by AIPerf documentation."),
	mooncake("mooncake-conversation", "conversation_trace.jsonl", "chat", "FAST25-release/traces/conversation_trace.jsonl",
		"b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df", "Mooncake FAST'25 conversation workload (12,031 requests, one hour)."),
	mooncake("mooncake-toolagent", "toolagent_trace.jsonl", "api-calling", "FAST25-release/traces/toolagent_trace.jsonl",
		"48a2db1a13d3bc05e6330140c64f604ba366df20d3c9e128b5c35a01c1fa5f71", "Mooncake FAST'25 tool and agent workload (23,608 requests)."),
	mooncake("mooncake-synthetic", "synthetic_trace.jsonl", "chat", "FAST25-release/traces/synthetic_trace.jsonl",
		"bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131", "Mooncake FAST'25 synthetic Poisson workload (3,993 requests)."),
	bailian("bailian-trace-a", "qwen_traceA_blksz_16.jsonl", "chat",
		"07cedc9ed8aff301994ac68ed4aede8123b7603673575eeba9dd677de663db17", "Alibaba Bailian anonymised to-C chat trace (about 56 MB)."),
	bailian("bailian-trace-b", "qwen_traceB_blksz_16.jsonl", "api-calling",
		"68e3f98e2d601d60d0abf4b89bc8a3654372abab7b1cde6373a13d0054379d59", "Alibaba Bailian anonymised to-B API-calling trace (about 96 MB)."),
	bailian("bailian-coder", "qwen_coder_blksz_16.jsonl", "coding",
		"3d74974cebb7bccb69b1ca6ea210a44d9a3033443c0271ed015327284dea1aff", "Alibaba Bailian anonymised code-generation trace (about 132 MB)."),
	bailian("bailian-thinking", "qwen_thinking_blksz_16.jsonl", "chat",
		"41ac36d9d1b54d084eeb6b05e9d142ba9d02f8bf79cfc9fff418d8ab7cdee906", "Alibaba Bailian anonymised thinking trace (about 28 MB)."),
	burstGPT("burstgpt-conversation", "burstgpt_conversation.csv", "chat", "Conversation log",
		"BurstGPT v2 Azure OpenAI conversation traffic, filtered from BurstGPT_1."),
	burstGPT("burstgpt-api", "burstgpt_api.csv", "api-calling", "API log",
		"BurstGPT v2 Azure OpenAI API traffic, filtered from BurstGPT_1."),
	weka(),
	sampleDataset(),
)

func sortedDatasets(ds ...Dataset) []Dataset {
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
	return ds
}

// localDataset is the <name>.dataset.json an operator drops into the datasets dir to register
// a trace file of their own, typically in a user module's format.
type localDataset struct {
	Name        string `json:"name"`
	Filename    string `json:"filename"`
	Scenario    string `json:"scenario"`
	TraceFormat string `json:"trace_format"`
	Description string `json:"description"`
	License     string `json:"license"`
}

// localDatasets reads the operator-registered datasets of root; malformed or clashing entries
// are reported through bad and skipped.
func localDatasets(root string, bad func(file string, err error)) []Dataset {
	files, _ := filepath.Glob(filepath.Join(root, "*.dataset.json"))
	var out []Dataset
	seen := map[string]bool{}
	for _, file := range files {
		if err := regularFile(file); err != nil {
			bad(file, err)
			continue
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			bad(file, err)
			continue
		}
		var l localDataset
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			bad(file, err)
			continue
		}
		_, clash := findIn(Datasets, l.Name)
		switch {
		case l.Name == "" || l.Filename == "" || l.TraceFormat == "":
			bad(file, fmt.Errorf("name, filename (a file in the datasets dir) and trace_format are required"))
		case l.Filename == "." || l.Filename == ".." || strings.ContainsAny(l.Filename, "/\\\x00") || strings.HasSuffix(l.Filename, ".dataset.json"):
			bad(file, fmt.Errorf("filename %q must name a file directly inside the datasets dir", l.Filename))
		case regularFile(filepath.Join(root, l.Filename)) != nil:
			bad(file, fmt.Errorf("filename %q: %w", l.Filename, regularFile(filepath.Join(root, l.Filename))))
		case seen[l.Name]:
			bad(file, fmt.Errorf("dataset %q is registered twice; the first registration is kept", l.Name))
		case !slices.ContainsFunc(Scenarios, func(s Scenario) bool { return s.Name == l.Scenario }):
			bad(file, fmt.Errorf("scenario %q is not chat, api-calling or coding", l.Scenario))
		case clash:
			bad(file, fmt.Errorf("dataset %q is already registered", l.Name))
		default:
			seen[l.Name] = true
			out = append(out, Dataset{Name: l.Name, Filename: l.Filename, Scenario: l.Scenario, TraceFormat: l.TraceFormat,
				Description: l.Description, License: l.License, Local: true})
		}
	}
	return out
}

// regularFile refuses what a registration must not point the parsers at: a symlink (anywhere
// it leads), a device or a pipe. A directory is a multi-file dataset (a folder of WEKA traces,
// as the built-in one is): it is accepted when everything in it is a regular file.
func regularFile(path string) error {
	info, err := os.Lstat(path)
	switch {
	case err != nil:
		return errors.New("no such file in the datasets dir")
	case info.Mode()&os.ModeSymlink != 0:
		return errors.New("is a symlink; put the file itself in the datasets dir")
	case info.IsDir():
		entries, err := os.ReadDir(path)
		if err != nil {
			return errors.New("is a folder that cannot be read")
		}
		if len(entries) == 0 {
			return errors.New("is an empty folder")
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				return fmt.Errorf("is a folder holding %q, which is not a regular file", e.Name())
			}
		}
		return nil
	case !info.Mode().IsRegular():
		return errors.New("is not a regular file")
	}
	return nil
}

func findIn(ds []Dataset, name string) (Dataset, bool) {
	for _, d := range ds {
		if d.Name == name {
			return d, true
		}
	}
	return Dataset{}, false
}

// parseManifest reads "<sha256>  <name>" lines (sha256sum's format).
func parseManifest(text string, url func(name string) string) ([]DatasetFile, error) {
	var files []DatasetFile
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 || len(fields[0]) != 64 || strings.ContainsAny(fields[1], "/\\") {
			return nil, fmt.Errorf("manifest line %d is not \"<sha256>  <file name>\"", line)
		}
		files = append(files, DatasetFile{Name: fields[1], SHA256: fields[0], URL: url(fields[1])})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, sc.Err()
}
