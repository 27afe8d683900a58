"""YAML -> specs: the bundled specs by name, any spec file by path, a Hugging Face config.json through rooflab.hf.

A spec is named either by a bundled name ("h100-sxm", "llama-3-8b") or by a path to the user's own YAML file. Every
problem is a SpecError that names the file, the field and the value; an unknown name lists what exists and
suggests the closest.

    bundled.py  the bundled specs' folders (data_dir) and names (available)
    build.py    a parsed mapping -> a spec dataclass, every problem of a file in one SpecError
    names.py    what a reference means: spec_path (a bundled name or a path), resolve_gpu_name (any of a GPU's names)
    cache.py    the cached loaders: load_gpu, bundled_model, yaml_model; clear_cache; gpu_file (the file load_gpu reads)
    disk_cache.py  checked specs kept on disk between runs ($ROOFLAB_CACHE_DIR; ROOFLAB_NO_CACHE=1 turns it off)
    models.py   load_model: a bundled name, a YAML or a config.json (rooflab.hf) with the published count;
                model_file (the file load_model reads)

Files are read by rooflab.files (bounded reads, strict YAML); read_yaml, parse_yaml, read_text, read_bounded and
MAX_SPEC_FILE_BYTES are re-exported here for one release.
"""

from ..files import MAX_SPEC_FILE_BYTES, parse_yaml, read_bounded, read_text, read_yaml
from ..specs import GpuSpec, MeasuredCeilings, ModelSpec
from .build import build, spec_from_mapping
from .bundled import SPEC_KINDS, available, data_dir
from .cache import PUBLISHED_COUNT_FACTOR, bundled_model, clear_cache, gpu_file, load_gpu, yaml_model
from .models import load_hf_config, load_model, model_file, with_published_count
from .names import resolve_gpu_name, spec_path

__all__ = ["MAX_SPEC_FILE_BYTES", "PUBLISHED_COUNT_FACTOR", "SPEC_KINDS", "GpuSpec", "MeasuredCeilings", "ModelSpec",
           "available", "build", "bundled_model", "clear_cache", "data_dir", "gpu_file", "load_gpu", "load_hf_config",
           "load_model", "model_file", "parse_yaml", "read_bounded", "read_text", "read_yaml", "resolve_gpu_name",
           "spec_from_mapping", "spec_path", "with_published_count", "yaml_model"]
