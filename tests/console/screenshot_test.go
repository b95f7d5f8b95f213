package console_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sort"
)

// Screenshots are taken at these widths (the console's wide and narrow layouts).
var screenshotWidths = []int64{1400, 800}

// maxScreenshotHeight cuts a full-page screenshot: the top of a long page is what it is about.
const maxScreenshotHeight = 2200

// overlapScript lists the texts of each chart on the page that overlap another text of the
// same chart (slanted labels, whose boxes overlap by construction, left out): "" when none.
const overlapScript = `(() => {
  const out = [];
  document.querySelectorAll("svg.chart").forEach((svg, n) => {
    const texts = [...svg.querySelectorAll("text")].filter((t) => !t.hasAttribute("transform") && t.textContent.trim() !== "");
    const boxes = texts.map((t) => t.getBoundingClientRect());
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
        out.push("chart " + n + ": " + JSON.stringify(texts[i].textContent) + " overlaps " + JSON.stringify(texts[j].textContent));
    }
  });
  return out.join("\n");
})()`

// smallPNG re-encodes a screenshot as a paletted PNG of at most 256 colours (the most frequent
// ones, by 5-bit channels), cut at maxScreenshotHeight: a page of flat colours and text loses
// nothing a reader sees and the file is a fraction of the size.
func smallPNG(raw []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the screenshot is not a PNG: %w", err)
	}
	b := img.Bounds()
	if b.Dy() > maxScreenshotHeight {
		b.Max.Y = b.Min.Y + maxScreenshotHeight
	}
	bin := func(c color.Color) int {
		r, g, bl, _ := c.RGBA()
		return int(r>>11)<<10 | int(g>>11)<<5 | int(bl>>11)
	}
	type acc struct{ n, r, g, b int }
	bins := map[int]*acc{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := img.At(x, y)
			r, g, bl, _ := c.RGBA()
			a := bins[bin(c)]
			if a == nil {
				a = &acc{}
				bins[bin(c)] = a
			}
			a.n++
			a.r, a.g, a.b = a.r+int(r>>8), a.g+int(g>>8), a.b+int(bl>>8)
		}
	}
	keys := make([]int, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return bins[keys[i]].n > bins[keys[j]].n || bins[keys[i]].n == bins[keys[j]].n && keys[i] < keys[j]
	})
	var pal color.Palette
	for _, k := range keys[:min(len(keys), 256)] {
		a := bins[k]
		pal = append(pal, color.RGBA{uint8(a.r / a.n), uint8(a.g / a.n), uint8(a.b / a.n), 255})
	}
	index := map[int]uint8{}
	out := image.NewPaletted(image.Rect(0, 0, b.Dx(), b.Dy()), pal)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := img.At(x, y)
			k := bin(c)
			i, ok := index[k]
			if !ok {
				i = uint8(pal.Index(c))
				index[k] = i
			}
			out.SetColorIndex(x-b.Min.X, y-b.Min.Y, i)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
