//! Which of the model's layers run on a GPU.
//!
//! A build with the `cuda` or `vulkan` feature compiles that llama.cpp
//! backend; at load time moot asks llama.cpp for its GPUs and, unless
//! `gpu_layers` says otherwise, puts every layer on the one with the most
//! free memory when the model fits there with room to spare (the rule of
//! [`plan`]). A build without a GPU backend, or a machine without a GPU,
//! runs the model on the CPU and says why.

use llama_cpp_2::{LlamaBackendDeviceType, list_llama_ggml_backend_devices};

use super::DEFAULT_PARALLEL;

/// "Every layer": llama.cpp offloads `min(n, layers + output)`.
pub const ALL_LAYERS: u32 = i32::MAX as u32;

/// Memory kept free beside the model's weights for its context (the KV
/// cache and compute buffers of the default context sizes): a quarter of
/// the weights plus this.
const HEADROOM: u64 = 1 << 30;

/// Whether this build has a GPU backend of llama.cpp.
pub const BUILT_WITH_GPU: bool = cfg!(any(feature = "cuda", feature = "vulkan"));

/// A GPU llama.cpp can use.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    /// llama.cpp's name for it (`CUDA0`, `Vulkan0`).
    pub name: String,
    /// The device's own description (`NVIDIA H200`).
    pub description: String,
    /// Free and total memory in bytes.
    pub free: u64,
    pub total: u64,
}

impl Gpu {
    fn label(&self) -> String {
        if self.description.is_empty() { self.name.clone() } else { format!("{} ({})", self.name, self.description) }
    }
}

/// The GPUs llama.cpp finds (none in a build without a GPU backend).
pub fn gpus() -> Vec<Gpu> {
    if super::worker::backend().is_err() {
        return Vec::new();
    }
    list_llama_ggml_backend_devices()
        .into_iter()
        .filter(|d| matches!(d.device_type, LlamaBackendDeviceType::Gpu | LlamaBackendDeviceType::IntegratedGpu))
        .map(|d| Gpu {
            name: d.name,
            description: d.description,
            free: d.memory_free as u64,
            total: d.memory_total as u64,
        })
        .collect()
}

/// `parallel` when none is configured: [`DEFAULT_PARALLEL`], or one
/// request at a time where llama.cpp finds a GPU. With several engines'
/// requests decoded in one batch, llama.cpp's CUDA backend returned logits
/// that are not numbers (the tiny model on an H200, 2026-11-30: with 2, 3
/// and 4 engines, the layers on the GPU or not); with one engine the
/// sample panel ran through.
pub fn auto_parallel(gpus: &[Gpu]) -> usize {
    if gpus.is_empty() { DEFAULT_PARALLEL } else { 1 }
}

/// Where the layers go, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Offload {
    /// Layers asked of llama.cpp ([`ALL_LAYERS`] for every one; 0: the CPU alone).
    pub layers: u32,
    /// The GPU that takes them.
    pub gpu: Option<String>,
    /// Why, in words.
    pub why: String,
}

/// Where a model of `model_bytes` runs, given `setting` (`gpu_layers`:
/// `None` for auto) and the machine's GPUs:
/// - no GPU: the CPU;
/// - a number: that many layers on the GPU with the most free memory (0: the CPU);
/// - auto: every layer on that GPU when its free memory holds the weights
///   plus a quarter and 1 GiB ([`HEADROOM`]); else the CPU, saying so (a
///   number offloads part).
pub fn plan(setting: Option<u32>, model_bytes: u64, gpus: &[Gpu]) -> Offload {
    let cpu = |why: String| Offload { layers: 0, gpu: None, why };
    let Some(best) = gpus.iter().max_by_key(|g| g.free) else {
        return cpu(if BUILT_WITH_GPU {
            "no GPU found".to_string()
        } else {
            "this build has no GPU backend: build with --features cuda or --features vulkan".to_string()
        });
    };
    match setting {
        Some(0) => cpu("gpu_layers = 0".to_string()),
        Some(n) => Offload { layers: n, gpu: Some(best.label()), why: format!("gpu_layers = {n}") },
        None => {
            let need = model_bytes + model_bytes / 4 + HEADROOM;
            if best.free >= need {
                Offload { layers: ALL_LAYERS, gpu: Some(best.label()), why: format!("auto: {} free", gib(best.free)) }
            } else {
                cpu(format!(
                    "auto: {} has {} free, about {} needed (set gpu_layers to offload part)",
                    best.label(),
                    gib(best.free),
                    gib(need)
                ))
            }
        }
    }
}

/// The plan in words, once the model is loaded and its layers are known:
/// `CUDA0 (NVIDIA H200): all 24 layers (auto: 139.2 GiB free)` or
/// `CPU (no GPU found)`.
pub fn describe(offload: &Offload, model_layers: u32) -> String {
    match &offload.gpu {
        Some(gpu) if offload.layers > model_layers => {
            format!("{gpu}: all {model_layers} layers ({})", offload.why)
        }
        Some(gpu) => format!("{gpu}: {} of {model_layers} layers ({})", offload.layers, offload.why),
        None => format!("CPU ({})", offload.why),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200(free_gib: u64) -> Gpu {
        Gpu { name: "CUDA0".into(), description: "NVIDIA H200".into(), free: free_gib << 30, total: 140 << 30 }
    }

    #[test]
    fn a_machine_with_a_gpu_serves_one_request_at_a_time_unless_told() {
        assert_eq!(auto_parallel(&[]), DEFAULT_PARALLEL);
        assert_eq!(auto_parallel(&[h200(100)]), 1);
    }

    #[test]
    fn auto_puts_every_layer_on_the_gpu_with_the_most_free_memory_when_the_model_fits() {
        let small = Gpu { name: "CUDA1".into(), free: 2 << 30, ..h200(0) };
        let p = plan(None, 1 << 30, &[small, h200(100)]);
        assert_eq!(p.layers, ALL_LAYERS);
        assert_eq!(p.gpu.as_deref(), Some("CUDA0 (NVIDIA H200)"));
        assert_eq!(describe(&p, 24), "CUDA0 (NVIDIA H200): all 24 layers (auto: 100.0 GiB free)");
    }

    #[test]
    fn auto_keeps_the_cpu_when_the_model_does_not_fit_and_says_why() {
        // 1.1 GB of weights need about 2.3 GiB with the headroom.
        let p = plan(None, 1_117_320_768, &[h200(2)]);
        assert_eq!(p.layers, 0);
        assert!(p.why.contains("2.0 GiB free, about 2.3 GiB needed"), "{}", p.why);
        assert!(describe(&p, 28).starts_with("CPU (auto: CUDA0"));
    }

    #[test]
    fn a_number_is_taken_as_given_and_zero_is_the_cpu() {
        let p = plan(Some(10), 1 << 30, &[h200(1)]);
        assert_eq!((p.layers, p.gpu.is_some()), (10, true));
        assert_eq!(describe(&p, 24), "CUDA0 (NVIDIA H200): 10 of 24 layers (gpu_layers = 10)");
        assert_eq!(plan(Some(0), 1 << 30, &[h200(100)]).layers, 0);
    }

    #[test]
    fn without_a_gpu_the_cpu_runs_it_whatever_the_setting() {
        for setting in [None, Some(5)] {
            let p = plan(setting, 1 << 30, &[]);
            assert_eq!((p.layers, p.gpu.clone()), (0, None));
            let expected = if BUILT_WITH_GPU { "no GPU found" } else { "this build has no GPU backend" };
            assert!(p.why.starts_with(expected), "{}", p.why);
        }
    }
}
