import type { JobSpec } from '../api/types';

// Built-in starting points for the submit form (the server stores none).

export interface JobTemplate {
  key: string;
  label: string;
  spec: JobSpec;
}

const PYTORCH_IMAGE = 'docker.io/pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime';

// Trainyard gives every replica MASTER_ADDR, MASTER_PORT and NODE_RANK, so
// torchrun on each replica only needs the shape of the gang.
const DDP_SCRIPT = `torchrun \\
  --nnodes=2 \\
  --nproc_per_node=4 \\
  --node_rank="$NODE_RANK" \\
  --master_addr="$MASTER_ADDR" \\
  --master_port="$MASTER_PORT" \\
  train.py
`;

export const TEMPLATES: JobTemplate[] = [
  { key: 'blank', label: 'Blank', spec: {} },
  {
    key: 'pytorch',
    label: 'PyTorch single GPU',
    spec: {
      name: 'pytorch-train',
      command: ['python', 'train.py'],
      image: PYTORCH_IMAGE,
      resources: { gpus: 1 },
    },
  },
  {
    key: 'ddp',
    label: 'Distributed data parallel (2 replicas × 4 GPUs)',
    spec: {
      name: 'ddp-train',
      script: DDP_SCRIPT,
      image: PYTORCH_IMAGE,
      resources: { gpus: 4 },
      replicas: 2,
      max_runtime: '12h',
    },
  },
  {
    key: 'cpu',
    label: 'CPU script',
    spec: {
      name: 'preprocess',
      script: 'python3 preprocess.py --input data/raw --output data/clean\n',
      resources: { gpus: 0, cpus: 4, memory: '8Gi' },
    },
  },
  {
    key: 'fraction',
    label: 'Notebook-style fraction GPU',
    spec: {
      name: 'notebook',
      command: ['jupyter', 'nbconvert', '--to', 'notebook', '--execute', 'analysis.ipynb'],
      resources: { gpus: '0.25', memory: '16Gi' },
      max_runtime: '4h',
    },
  },
];

export function templateByKey(key: string): JobTemplate | undefined {
  return TEMPLATES.find((t) => t.key === key);
}
