package workload

// MisplacementRisk is what a workload should show without the operator.
type MisplacementRisk struct {
	// AtRiskPods pin no architecture of their own (no required affinity, no
	// nodeSelector) and have an image that lacks some node's architecture.
	AtRiskPods int
	// Expected is the misplacements expected if the scheduler spread those
	// pods evenly over the nodes: the sum over them of the share of nodes
	// they cannot run on. The scheduler's scoring spreads pods by free
	// resources, not architecture, so evenly is the right first model.
	Expected float64
}

// BaselineRisk says how many misplacements the pods should produce when
// nothing steers them, from the plan and the nodes per architecture alone.
func BaselineRisk(pods []Pod, nodesByArch map[string]int) MisplacementRisk {
	total := 0
	for _, n := range nodesByArch {
		total += n
	}
	var out MisplacementRisk
	if total == 0 {
		return out
	}
	for _, p := range pods {
		if p.ArchAffinity != "" || p.NodeSelectorArch != "" {
			continue
		}
		unfit := 0
		for arch, n := range nodesByArch {
			if !p.Runs(arch) {
				unfit += n
			}
		}
		if unfit > 0 {
			out.AtRiskPods++
			out.Expected += float64(unfit) / float64(total)
		}
	}
	return out
}
