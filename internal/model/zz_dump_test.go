package model
import ("testing";"fmt";"strings")
func TestDump(t *testing.T){
 for name, c := range corpusCases(t, "testdata/bad") {
  if !strings.HasPrefix(name, "decode-") { continue }
  res := NewLoader().Load(c.files)
  fmt.Println("==", name)
  for _, d := range res.Diagnostics { fmt.Println(d.String()) }
 }
}
